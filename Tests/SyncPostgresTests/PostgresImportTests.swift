import Foundation
import SyncBackend
import Testing

@testable import SyncPostgres

/// `PostgresContainer.importEntries` (the destination of `container copy`), written as one
/// statement per page (`PostgresBulkEntries`): every column round-trips, NULL and empty alike;
/// an ID given twice keeps its newest version; importing again is harmless; the counter is
/// raised to the newest version and never lowered. Against the real PostgreSQL of
/// `scripts/services.sh`.
@Suite struct PostgresImportTests {
    private func entry(
        _ id: FileID, _ version: EntryVersion, _ state: EntryState, deleted: Bool = false, device: String = "dev"
    ) -> RemoteEntry {
        RemoteEntry(id: id, version: version, isDeleted: deleted, device: device, state: state)
    }

    @Test func everyColumnRoundTripsAndTheNewestVersionOfAnIDWins() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "import")
        let folder = FileID.random()
        let file = FileID.random()
        let link = FileID.random()
        let gone = FileID.random()
        let manifest = [ChunkRef(hash: ChunkHash(hex: String(repeating: "ab", count: 32))!, length: 7)]
        var fileState = EntryState(
            parent: folder, name: Array("a\u{0}b".utf8).filter { $0 != 0 } + [0xFF], kind: .file, mode: 0o4755,
            mtime: -5, size: 7, xattrs: ["user.k": [0, 1, 2], "user.empty": []], manifest: manifest)
        let older = entry(file, 2, fileState)
        fileState.name = Array("renamed".utf8)
        let entries = [
            entry(folder, 1, directory("docs")),
            older,
            entry(
                link, 3,
                EntryState(
                    parent: .root, name: Array("link".utf8), kind: .symlink, mode: 0o777, mtime: 0, size: 0,
                    symlinkTarget: Array("docs/renamed".utf8))),
            entry(gone, 4, directory("gone"), deleted: true, device: "other"),
            entry(file, 5, fileState),
        ]
        try await container.importEntries(entries.shuffled())
        let expected = entries.filter { $0 != older }
        #expect(try await container.changes(after: .beginning, limit: 100).entries == expected)
        for entry in expected { #expect(try await container.entry(entry.id) == entry) }
        #expect(try await container.latestVersion() == 5)
        // Again (a resumed copy), and an older page: nothing changes, the counter stays.
        try await container.importEntries(entries)
        try await container.importEntries([entries[0]])
        #expect(try await container.changes(after: .beginning, limit: 100).entries == expected)
        #expect(try await container.latestVersion() == 5)
        // The next commit takes the version after the newest imported.
        let next = try await container.commit(put(FileID.random(), base: 0, directory("new")))
        guard case .committed(let made) = next else { throw TestFailure("refused: \(next)") }
        #expect(made.version == 6)
        await fixture.close(store)
    }

    /// A page of the size `container copy` imports goes in as one statement.
    @Test func aPageOfAThousandEntriesIsImported() async throws {
        let fixture = try await PostgresFixture.make()
        let store = try await fixture.open()
        let container = try await store.createContainer(named: "page")
        let entries = (1...1000).map { index in
            entry(.random(), EntryVersion(index), directory("d\(index)"))
        }
        try await container.importEntries(entries)
        var all: [RemoteEntry] = []
        var cursor = FeedCursor.beginning
        while true {
            let batch = try await container.changes(after: cursor, limit: 300)
            all += batch.entries
            cursor = batch.cursor
            if !batch.moreComing { break }
        }
        #expect(all == entries)
        await fixture.close(store)
    }
}
