import SyncBackend
import SyncBackendTesting
import Testing

@testable import SyncSealed

/// The feed a sealed container shows its engine: positions come from the ledger, so they are the
/// same for every device and every restart, and the container underneath cannot skip or repeat one.
@Suite("Sealed container: the engine's feed")
struct SealedFeedTests {
    static func put(_ container: SealedContainer, _ name: String, id: FileID = .random(), base: EntryVersion = 0)
        async throws -> FileID
    {
        let outcome = try await container.commit(
            CommitRequest(id: id, baseVersion: base, change: .put(MembershipTests.folder(name)), device: "d"))
        guard case .committed = outcome else { throw SealedError.malformed("not committed: \(outcome)") }
        return id
    }

    /// Every entry the feed shows after `cursor`, page by page, and the cursor at its end.
    static func drain(_ container: SealedContainer, after cursor: FeedCursor, limit: Int) async throws
        -> (names: [String], cursor: FeedCursor)
    {
        var names: [String] = []
        var position = cursor
        while true {
            let page = try await container.changes(after: position, limit: limit)
            names += page.entries.map { String(decoding: $0.state.name, as: UTF8.self) }
            position = page.cursor
            if !page.moreComing { return (names, position) }
        }
    }

    @Test func aCursorKeptAcrossARestartGoesOnWhereItStopped() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let first = try await SealedContainer.create(in: server, as: laptop, recovery: .generate(), deviceName: "l")
        for index in 0..<5 { _ = try await Self.put(first, "a\(index)") }
        let (seen, cursor) = try await Self.drain(first, after: .beginning, limit: 2)
        #expect(seen == (0..<5).map { "a\($0)" })
        #expect(cursor.token.hasPrefix("s1."), "the engine's cursor is the wrapper's own: \(cursor)")

        let firstPage = try await first.changes(after: .beginning, limit: 1)
        let changed = try #require(firstPage.entries.first)
        _ = try await Self.put(first, "a0 renamed", id: changed.id, base: changed.version)
        _ = try await Self.put(first, "b")
        // Another wrapper (a restart, or another device) reads on from the same cursor.
        let restarted = SealedContainer(wrapping: server, as: laptop, knownHead: first.head)
        let (more, end) = try await Self.drain(restarted, after: cursor, limit: 1)
        #expect(more == ["a0 renamed", "b"])
        #expect(try await restarted.changes(after: end, limit: 10).entries.isEmpty)
        // From the beginning, each entry once, at its newest version.
        #expect(
            try await Self.drain(restarted, after: .beginning, limit: 3).names == [
                "a1", "a2", "a3", "a4", "a0 renamed", "b",
            ])
    }

    @Test func aCursorItNeverGaveOutIsRefused() async throws {
        let server = InMemoryContainer()
        let container = try await SealedContainer.create(
            in: server, as: .generate(), recovery: .generate(), deviceName: "l")
        _ = try await Self.put(container, "x")
        let underneath = try await server.changes(after: .beginning, limit: 1).cursor
        for forged in [
            underneath, FeedCursor(token: "s1.99.0"), FeedCursor(token: "s1.1"), FeedCursor(token: "s1.01.0"),
        ] {
            await #expect(throws: ContainerProtocolError.self, "\(forged)") {
                _ = try await container.changes(after: forged, limit: 10)
            }
        }
    }

    @Test func aFeedUnderneathThatDoesNotAdvanceIsAnErrorNotALoop() async throws {
        let server = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let made = try await SealedContainer.create(in: server, as: laptop, recovery: .generate(), deviceName: "l")
        _ = try await Self.put(made, "x")
        let stuck = StuckFeed(server)
        let reader = SealedContainer(wrapping: stuck, as: laptop, knownHead: made.head)
        await #expect(throws: ContainerProtocolError.self) {
            _ = try await reader.changes(after: .beginning, limit: 10)
        }
        #expect(reader.alarm == nil, "a feed that does not move on is not an attack that was caught")
    }

    @Test func theAuthorTheEngineSeesIsTheSignedOneNotTheServersCopy() async throws {
        let base = InMemoryContainer()
        let server = LyingServer(base)
        let laptop = DeviceKeys.generate()
        let made = try await SealedContainer.create(in: server, as: laptop, recovery: .generate(), deviceName: "l")
        let id = try await Self.put(made, "mine")
        server.lie(feed: { entries in
            entries.map {
                var entry = $0
                entry.device = "another device"
                return entry
            }
        })
        let reader = SealedContainer(wrapping: server, as: laptop, knownHead: made.head)
        #expect(try await reader.entry(id)?.device == "d")
        #expect(try await reader.changes(after: .beginning, limit: 10).entries.map(\.device) == ["d"])
    }

    /// The versions the engine sees are the ledger's: a server that renumbers its own (to make a
    /// later change look older than one the engine holds) changes nothing the engine sees, and a
    /// commit is answered with the ledger's version, whatever the container answered.
    @Test func theEnginesVersionsAreTheLedgersNotTheServers() async throws {
        let base = InMemoryContainer()
        let laptop = DeviceKeys.generate()
        let made = try await SealedContainer.create(in: base, as: laptop, recovery: .generate(), deviceName: "l")
        let id = try await Self.put(made, "first")
        let answered = try #require(try await made.entry(id))
        #expect(answered.version == FeedSpot(sequence: 2, index: 0).version)

        let renumbering = LyingServer(base)
        renumbering.lie(feed: { entries in
            entries.map {
                var entry = $0
                entry.version += 1_000_000
                return entry
            }
        })
        let reader = SealedContainer(wrapping: renumbering, as: laptop, knownHead: made.head)
        #expect(try await reader.entry(id)?.version == answered.version)
        _ = try await Self.put(made, "renamed", id: id, base: answered.version)
        let changed = try #require(try await reader.entry(id))
        #expect(changed.version == FeedSpot(sequence: 3, index: 0).version && changed.version > answered.version)
    }
}

/// A container whose feed answers every call with one page that says more is coming, at the
/// cursor it was asked for.
private struct StuckFeed: ForwardingTestContainer {
    let base: InMemoryContainer
    init(_ base: InMemoryContainer) { self.base = base }

    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        ChangeBatch(entries: [], cursor: cursor, moreComing: true)
    }
}
