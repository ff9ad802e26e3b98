import Testing

@testable import SyncBackend

/// The `Container` contract, continued: the change feed and `waitForChanges`.
extension ContainerConformanceTests {
    @Test(arguments: ContainerKind.allCases)
    func theFeedListsEachEntryOnceAtItsLatestVersionInCommitOrder(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let empty = try await container.changes(after: .beginning, limit: 10)
        #expect(empty.entries.isEmpty && !empty.moreComing)

        let a = try await container.mustPut(.random(), base: 0, directoryState("a"))
        let b = try await container.mustPut(.random(), base: 0, directoryState("b"))
        let c = try await container.mustPut(.random(), base: 0, fileState("c"))
        let a2 = try await container.mustPut(a.id, base: a.version, directoryState("a2"))
        let a3 = try await container.mustPut(a.id, base: a2.version, directoryState("a3"))
        let cGone = try await container.mustDelete(c.id, base: c.version)

        let batch = try await container.changes(after: .beginning, limit: 10, whole: kind.isSealed)
        #expect(batch.entries == [b, a3, cGone])
        #expect(!batch.moreComing)
        let versions = batch.entries.map(\.version)
        #expect(versions == versions.sorted())

        // After the batch's cursor: nothing, and the cursor stays.
        let after = try await container.changes(after: batch.cursor, limit: 10)
        #expect(after.entries.isEmpty && !after.moreComing && after.cursor == batch.cursor)
        // A change to an entry already seen shows up again.
        let b2 = try await container.mustPut(b.id, base: b.version, directoryState("b2"))
        #expect(try await container.changes(after: batch.cursor, limit: 10).entries == [b2])
    }

    @Test(arguments: ContainerKind.allCases)
    func theFeedPagesWithLimitMoreComingAndCursor(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        var committed: [RemoteEntry] = []
        for index in 0..<5 { committed.append(try await container.mustPut(.random(), base: 0, fileState("f\(index)"))) }

        var cursor = FeedCursor.beginning
        var pages: [[RemoteEntry]] = []
        var moreComing: [Bool] = []
        repeat {
            let batch = try await container.changes(after: cursor, limit: 2)
            pages.append(batch.entries)
            moreComing.append(batch.moreComing)
            cursor = batch.cursor
        } while moreComing.last == true
        if kind.isSealed {
            // Smaller pages (ledger entries take places underneath), each within the limit.
            #expect(pages.allSatisfy { $0.count <= 2 } && Array(pages.joined()) == committed)
            #expect(moreComing.last == false && moreComing.dropLast().allSatisfy { $0 })
        } else {
            #expect(pages == [Array(committed[0..<2]), Array(committed[2..<4]), [committed[4]]])
            #expect(moreComing == [true, true, false])
        }

        let next = try await container.mustPut(.random(), base: 0, fileState("f5"))
        let batch = try await container.changes(after: cursor, limit: 2)
        #expect(batch.entries == [next] && !batch.moreComing)

        #expect(
            await protocolError { _ = try await container.changes(after: cursor, limit: 0) }?.isInvalidRequest == true)
        for token in ["not a cursor", "-1", "18446744073709551615"] {
            let garbage = FeedCursor(token: token)
            let error = await protocolError { _ = try await container.changes(after: garbage, limit: 1) }
            #expect(error?.isInvalidRequest == true, "\(token)")
        }
        #expect(try await container.changes(after: .beginning, limit: .max).entries.count == 6)
    }

    @Test(arguments: ContainerKind.allCases)
    func waitingWakesPromptlyOnACommitFromAnotherTask(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        try await container.mustPut(.random(), base: 0, directoryState("before"))
        let cursor = try await container.currentCursor()

        let waiter = Task { () throws -> (Bool, ContinuousClock.Instant) in
            let changed = try await container.waitForChanges(after: cursor, timeout: .seconds(60))
            return (changed, ContinuousClock.now)
        }
        try await Task.sleep(for: .milliseconds(100))  // scenario: the waiter blocks before the commit
        let committing = ContinuousClock.now
        try await container.mustPut(.random(), base: 0, directoryState("after"))
        let (changed, woke) = try await waiter.value
        let latency = woke - committing
        print("\(kind): waitForChanges woke \(latency) after the commit started")
        #expect(changed)
        // Woken by the commit, not by the end of the wait; no tighter bound (a loaded machine
        // takes seconds; the figure is printed above, and measured in scripts/bench.sh).
        #expect(latency < .seconds(20))
    }

    @Test(arguments: ContainerKind.allCases)
    func waitingReturnsAtOnceWhenBehindAndFalseAfterTheTimeout(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        try await container.mustPut(.random(), base: 0, directoryState("a"))
        let start = ContinuousClock.now
        #expect(try await container.waitForChanges(after: .beginning, timeout: .seconds(60)))
        #expect(ContinuousClock.now - start < .seconds(20), "returned at once, not after the wait")

        let cursor = try await container.currentCursor()
        let waitStart = ContinuousClock.now
        #expect(try await container.waitForChanges(after: cursor, timeout: .milliseconds(300)) == false)
        let waited = ContinuousClock.now - waitStart
        // The upper bound only tells a timed-out wait from a hung one (generous for a loaded machine).
        #expect(waited >= .milliseconds(300) && waited < .seconds(8))
    }

    @Test(arguments: ContainerKind.allCases)
    func aCancelledWaitReturnsFalsePromptly(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let waiter = Task { try await container.waitForChanges(after: .beginning, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))  // scenario: cancel a wait that is under way
        let start = ContinuousClock.now
        waiter.cancel()
        #expect(try await waiter.value == false)
        // Far from the 30 s wait it tells apart, whatever the machine's load.
        #expect(ContinuousClock.now - start < .seconds(8))
    }
}
