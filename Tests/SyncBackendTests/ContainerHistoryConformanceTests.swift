import Testing

@testable import SyncBackend

/// The `ContainerHistory` contract, checked against every implementation that keeps history,
/// and through the sealed wrapper (which decrypts the history underneath).
private let historyKinds = ContainerKind.allCases

@Suite("Container history conformance")
struct ContainerHistoryConformanceTests {
    @Test(arguments: historyKinds)
    func versionsAreListedNewestFirstWithTheirTimes(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let history = try #require(container as? any ContainerHistory)
        let first = rawChunk("first content")
        let second = rawChunk("second content")
        try await container.putChunk(first)
        try await container.putChunk(second)
        let id = FileID.random()
        #expect(try await history.history(of: id, limit: 10).isEmpty)

        let before = WallClock.nanoseconds()
        let created = try await container.mustPut(id, base: 0, fileState("notes.txt", chunks: [first]))
        let rewritten = try await container.mustPut(id, base: created.version, fileState("notes.txt", chunks: [second]))
        let renamed = try await container.mustPut(
            id, base: rewritten.version, fileState("renamed.txt", chunks: [second]))
        let after = WallClock.nanoseconds()

        let versions = try await history.history(of: id, limit: 10)
        #expect(versions.map(\.entry) == [renamed, rewritten, created])
        #expect(versions[0].replacedAt == nil)
        // Each superseded version was replaced when the next one was committed.
        #expect(versions[1].replacedAt == versions[0].committedAt)
        #expect(versions[2].replacedAt == versions[1].committedAt)
        for version in versions {
            #expect(version.committedAt >= before && version.committedAt <= after)
            #expect(version.replacedAt.map { $0 >= version.committedAt } ?? true)
        }
        #expect(try await history.history(of: id, limit: 2).map(\.entry) == [renamed, rewritten])
        #expect(try await history.history(of: id, limit: 1).map(\.entry) == [renamed])
    }

    @Test(arguments: historyKinds)
    func limitsOutsideThePageSizesAreRefused(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let history = try #require(fixture.container as? any ContainerHistory)
        for limit in [0, -1, HistoryPage.limits.upperBound + 1] {
            #expect(
                await protocolError { _ = try await history.history(of: .root, limit: limit) }?.isInvalidRequest == true
            )
            #expect(
                await protocolError { _ = try await history.deletedEntries(before: nil, limit: limit) }?
                    .isInvalidRequest == true)
        }
        #expect(try await history.history(of: .root, limit: HistoryPage.limits.upperBound).isEmpty)
    }

    @Test(arguments: historyKinds)
    func deletedEntriesArePagedNewestFirstWithTheirLastState(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let history = try #require(container as? any ContainerHistory)
        let chunk = rawChunk("kept in the trash")
        try await container.putChunk(chunk)
        var tombstones: [RemoteEntry] = []
        var lastStates: [EntryState] = []
        for index in 0..<5 {
            let id = FileID.random()
            let state = fileState("file-\(index)", chunks: [chunk])
            let created = try await container.mustPut(id, base: 0, state)
            tombstones.append(try await container.mustDelete(id, base: created.version))
            lastStates.append(state)
        }
        let live = try await container.mustPut(FileID.random(), base: 0, fileState("alive", chunks: [chunk]))

        let newestFirst = Array(tombstones.reversed())
        let all = try await history.deletedEntries(before: nil, limit: 100)
        #expect(all.map(\.entry) == newestFirst)
        #expect(all.allSatisfy { $0.entry.isDeleted && $0.replacedAt == nil && $0.committedAt > 0 })
        #expect(all.map(\.entry.state) == lastStates.reversed())
        #expect(!all.contains { $0.entry.id == live.id })

        // Paging: each page continues below the last version of the previous one.
        let page1 = try await history.deletedEntries(before: nil, limit: 2)
        let page2 = try await history.deletedEntries(before: page1.last!.entry.version, limit: 2)
        let page3 = try await history.deletedEntries(before: page2.last!.entry.version, limit: 2)
        #expect((page1 + page2 + page3).map(\.entry) == newestFirst)
        #expect(page3.count == 1)
        #expect(try await history.deletedEntries(before: page3.last!.entry.version, limit: 2).isEmpty)

        // The tombstone is its entry's current version in the history, the live state below it.
        let versions = try await history.history(of: tombstones[0].id, limit: 10)
        #expect(versions.map(\.entry.version) == [tombstones[0].version, kind.versionBefore(tombstones[0].version)])
        #expect(versions[0].entry.isDeleted && !versions[1].entry.isDeleted)
        #expect(versions[1].replacedAt == versions[0].committedAt)
    }

    @Test(arguments: historyKinds)
    func aRecreatedEntryLeavesTheTrashAndKeepsItsTombstoneInItsHistory(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let history = try #require(container as? any ContainerHistory)
        let id = FileID.random()
        let created = try await container.mustPut(id, base: 0, directoryState("docs"))
        let tombstone = try await container.mustDelete(id, base: created.version)
        #expect(try await history.deletedEntries(before: nil, limit: 10).map(\.entry) == [tombstone])

        let restored = try await container.mustPut(id, base: tombstone.version, tombstone.state)
        #expect(try await history.deletedEntries(before: nil, limit: 10).isEmpty)
        let versions = try await history.history(of: id, limit: 10)
        #expect(versions.map(\.entry) == [restored, tombstone, created])
        #expect(versions.map { $0.replacedAt == nil } == [true, false, false])
    }
}
