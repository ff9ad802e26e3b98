import SyncBackend
import Testing

@testable import SyncFS

/// `TrashIndex`: what `trash` lists and what `restore` brings back with a deleted folder.
@Suite("Trash index")
struct TrashIndexTests {
    private static let minute: Int64 = 60 * 1_000_000_000
    private let liveFolder = FileID.random()

    private func tombstone(
        _ id: FileID, parent: FileID, name: String, version: EntryVersion, at minutes: Int64,
        kind: NodeKind = .file, size: Int64 = 0
    ) -> HistoricVersion {
        let state = EntryState(parent: parent, name: Array(name.utf8), kind: kind, mode: 0o644, mtime: 0, size: size)
        return HistoricVersion(
            entry: RemoteEntry(id: id, version: version, isDeleted: true, device: "d", state: state),
            committedAt: minutes * Self.minute, replacedAt: nil)
    }

    private func livePath(_ id: FileID) -> String? { id == liveFolder ? "docs" : nil }

    @Test func aFolderTakesWhatWasDeletedWithItAndNotWhatWentBefore() {
        let folder = FileID.random()
        let withIt = FileID.random()
        let nested = FileID.random()
        let inNested = FileID.random()
        let earlier = FileID.random()
        let index = TrashIndex(
            [
                tombstone(folder, parent: liveFolder, name: "old", version: 50, at: 100, kind: .directory),
                tombstone(nested, parent: folder, name: "sub", version: 49, at: 100, kind: .directory),
                tombstone(inNested, parent: nested, name: "b.txt", version: 48, at: 99, size: 7),
                tombstone(withIt, parent: folder, name: "a.txt", version: 47, at: 95, size: 5),
                // Deleted an hour before the folder: an item of its own.
                tombstone(earlier, parent: folder, name: "gone.txt", version: 10, at: 40, size: 3),
            ], livePath: livePath)

        #expect(index.items.map(\.entry.id) == [folder, earlier])
        #expect(index.path(of: folder) == "docs/old")
        #expect(index.path(of: inNested) == "docs/old/sub/b.txt")
        #expect(index.path(of: earlier) == "docs/old/gone.txt")
        let group = index.deletedTogether(with: folder).map(\.entry.id)
        #expect(Set(group) == [folder, nested, inNested, withIt])
        #expect(group.first == folder)
        #expect(group.firstIndex(of: nested)! < group.firstIndex(of: inNested)!)
        #expect(index.deletedTogether(with: earlier).map(\.entry.id) == [earlier])
    }

    @Test func theNewestDeletionOfAPathIsTheOneFoundByIt() {
        let first = FileID.random()
        let second = FileID.random()
        let index = TrashIndex(
            [
                tombstone(first, parent: liveFolder, name: "a.txt", version: 5, at: 1),
                tombstone(second, parent: liveFolder, name: "a.txt", version: 9, at: 2),
            ], livePath: livePath)
        #expect(index.entry(atPath: "docs/a.txt")?.entry.id == second)
        #expect(index.entry(atPath: "docs/b.txt") == nil)
    }

    @Test func anEntryBelowAFolderGoneForGoodHasNoPathAndCyclesEnd() {
        let orphan = FileID.random()
        let a = FileID.random()
        let b = FileID.random()
        let index = TrashIndex(
            [
                tombstone(orphan, parent: FileID.random(), name: "x", version: 3, at: 1),
                // A hostile container's cycle: each the other's parent.
                tombstone(a, parent: b, name: "a", version: 4, at: 1, kind: .directory),
                tombstone(b, parent: a, name: "b", version: 5, at: 1, kind: .directory),
            ], livePath: livePath)
        #expect(index.path(of: orphan) == nil)
        #expect(index.path(of: a) == nil && index.path(of: b) == nil)
        #expect(Set(index.deletedTogether(with: a).map(\.entry.id)) == [a, b])
    }

    @Test func versionChangesAreNamedAgainstThePreviousVersion() {
        let id = FileID.random()
        func entry(
            _ version: EntryVersion, deleted: Bool = false, name: String = "a", size: Int64 = 1, mode: UInt32 = 0o644
        )
            -> RemoteEntry
        {
            RemoteEntry(
                id: id, version: version, isDeleted: deleted, device: "d",
                state: EntryState(parent: .root, name: Array(name.utf8), kind: .file, mode: mode, mtime: 0, size: size))
        }
        #expect(VersionChange.between(older: nil, newer: entry(1)) == .oldestKept)
        #expect(VersionChange.between(older: entry(1), newer: entry(2, size: 2)) == .modified)
        #expect(VersionChange.between(older: entry(1), newer: entry(2, name: "b")) == .moved)
        #expect(VersionChange.between(older: entry(1), newer: entry(2, mode: 0o600)) == .attributes)
        #expect(VersionChange.between(older: entry(1), newer: entry(2, deleted: true)) == .deleted)
        #expect(VersionChange.between(older: entry(2, deleted: true), newer: entry(3)) == .restored)
    }
}
