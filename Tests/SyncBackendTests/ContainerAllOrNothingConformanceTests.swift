import Testing

@testable import SyncBackend

/// `Container.commit(allOrNothing:)`, checked against every container (`ContainerKind`): all the
/// changes committed together at consecutive versions, or none of them stored and the first
/// refusal named; malformed calls throw and store nothing.
@Suite("Container conformance: all or nothing")
struct ContainerAllOrNothingConformanceTests {
    @Test(arguments: ContainerKind.allCases)
    func everyChangeIsCommittedTogetherAtConsecutiveVersions(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let stored = rawChunk("a stored chunk")
        try await container.putChunk(stored)
        let before = try await container.mustPut(.random(), base: 0, directoryState("before"))
        let cursor = try await container.currentCursor()
        let waiter = Task { () throws -> (Bool, ChangeBatch) in
            let woke = try await container.waitForChanges(after: cursor, timeout: .seconds(60))
            return (woke, try await container.changes(after: cursor, limit: 1_000))
        }
        // A folder, then a file in it (decided against the folder just made), then others.
        let folder = FileID.random()
        let requests = [
            putRequest(folder, directoryState("folder")),
            putRequest(.random(), fileState("in folder", in: folder, chunks: [stored])),
            putRequest(before.id, base: before.version, directoryState("renamed")),
            putRequest(.random(), symlinkState("link", in: folder, target: "in folder")),
        ]
        let answer = try await container.commit(allOrNothing: requests)
        guard case .committed(let entries) = answer else {
            Issue.record("not committed: \(answer)")
            return
        }
        #expect(entries.map(\.id) == requests.map(\.id))
        #expect(entries.map(\.version) == kind.versions(after: before.version, count: 4))
        #expect(entries[1].state.parent == folder && entries[1].state.manifest.map(\.hash) == [stored.hash])
        for entry in entries { #expect(try await container.entry(entry.id) == entry) }
        let (woke, seen) = try await waiter.value
        #expect(woke)
        #expect(seen.entries == entries, "the waiter saw \(seen.entries.count) of \(entries.count) in one read")
        #expect(try await container.waitForChanges(after: seen.cursor, timeout: .milliseconds(200)) == false)
    }

    /// Each kind of refusal at the first, a middle and the last place: the answer names that
    /// change and its outcome, nothing is stored (entries, the feed, a waiter), and the next
    /// commit takes the next version as if the call never was.
    @Test(arguments: ContainerKind.allCases)
    func aRefusalAnywhereStoresNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let absent = rawChunk("never stored")
        let taken = try await container.mustPut(.random(), base: 0, fileState("taken"))
        let existing = try await container.mustPut(.random(), base: 0, directoryState("existing"))
        let refusals: [(what: String, request: CommitRequest, outcome: CommitOutcome)] = [
            (
                "versionConflict", putRequest(existing.id, base: existing.version + 5, directoryState("moved")),
                .versionConflict(current: existing)
            ),
            ("nameTaken", putRequest(.random(), fileState("taken")), .nameTaken(by: taken)),
            ("parentMissing", putRequest(.random(), fileState("orphan", in: .random())), .parentMissing),
            (
                "chunksMissing", putRequest(.random(), fileState("lacking", chunks: [absent])),
                .chunksMissing([absent.hash])
            ),
        ]
        var newest = existing.version
        for refusal in refusals {
            for position in 0...2 {
                let cursor = try await container.currentCursor()
                let folder = FileID.random()
                var requests = [
                    putRequest(folder, directoryState("folder \(refusal.what) \(position)")),
                    putRequest(.random(), fileState("file", in: folder)),
                ]
                requests.insert(refusal.request, at: position)
                let answer = try await container.commit(allOrNothing: requests)
                #expect(
                    answer == .refused(index: position, outcome: refusal.outcome), "\(refusal.what) at \(position)")
                for request in requests where request.id != existing.id {
                    #expect(try await container.entry(request.id) == nil, "\(refusal.what) at \(position)")
                }
                #expect(try await container.entry(existing.id) == existing)
                #expect(try await container.changes(after: cursor, limit: 100).entries.isEmpty)
                #expect(try await container.waitForChanges(after: cursor, timeout: .milliseconds(50)) == false)
            }
            let next = try await container.mustPut(.random(), base: 0, fileState("after \(refusal.what)"))
            #expect(
                next.version == kind.nextVersion(after: newest), "a refused call used up versions (\(refusal.what))")
            newest = next.version
        }
    }

    /// The other refusals (an empty folder's rules, a cycle) are named too, with the outcome the
    /// change would have had after the changes before it.
    @Test(arguments: ContainerKind.allCases)
    func aRefusalIsDecidedAfterTheChangesBeforeIt(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let outer = try await container.mustPut(.random(), base: 0, directoryState("outer"))
        let inner = try await container.mustPut(.random(), base: 0, directoryState("inner", in: outer.id))
        let feed = try await container.wholeFeed()

        // A child made first keeps its new folder from being deleted.
        let folder = FileID.random()
        let notEmpty = try await container.commit(allOrNothing: [
            putRequest(folder, directoryState("new")),
            putRequest(.random(), fileState("child", in: folder)),
            deleteRequest(outer.id, base: outer.version),
        ])
        #expect(notEmpty == .refused(index: 2, outcome: .directoryNotEmpty))
        // Moving the outer folder into its own child.
        let cycle = try await container.commit(allOrNothing: [
            putRequest(.random(), directoryState("fine")),
            putRequest(outer.id, base: outer.version, directoryState("outer", in: inner.id)),
        ])
        #expect(cycle == .refused(index: 1, outcome: .wouldCreateCycle))
        // A name freed by an earlier change of the call is free for a later one, and a name an
        // earlier change took is taken.
        let swapped = FileID.random()
        let renamed = try await container.commit(allOrNothing: [
            putRequest(inner.id, base: inner.version, directoryState("inner 2", in: outer.id)),
            putRequest(swapped, directoryState("inner", in: outer.id)),
            putRequest(.random(), directoryState("inner 2", in: outer.id)),
        ])
        guard case .refused(2, .nameTaken(let holder)) = renamed else {
            Issue.record("not refused at 2 as a name taken: \(renamed)")
            return
        }
        #expect(holder.id == inner.id && holder.state.name == Array("inner 2".utf8))
        #expect(try await container.wholeFeed() == feed)

        let committed = try await container.commit(allOrNothing: [
            putRequest(inner.id, base: inner.version, directoryState("inner 2", in: outer.id)),
            putRequest(swapped, directoryState("inner", in: outer.id)),
        ])
        #expect(committed.isCommitted, "\(committed)")
        #expect(try await container.entry(swapped)?.state.name == Array("inner".utf8))
    }

    /// A malformed change anywhere (also after a refused one), an entry named twice, or more
    /// changes than `CommitBatch.maximumChanges`: `invalidRequest`, nothing stored.
    @Test(arguments: ContainerKind.allCases)
    func malformedCallsThrowAndStoreNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let existing = try await container.mustPut(.random(), base: 0, directoryState("existing"))
        let malformed: [CommitRequest] = [
            putRequest(.random(), fileState("a/b")),
            deleteRequest(.random(), base: 0),
        ]
        for bad in malformed {
            for position in 0...2 {
                var requests = [putRequest(.random(), fileState("one")), putRequest(.random(), fileState("two"))]
                requests.insert(bad, at: position)
                let error = await protocolError { _ = try await container.commit(allOrNothing: requests) }
                #expect(error?.isInvalidRequest == true, "\(bad.change) at \(position): \(String(describing: error))")
                #expect(try await container.wholeFeed() == [existing])
            }
        }
        let afterRefusal = [
            putRequest(.random(), fileState("orphan", in: .random())), deleteRequest(.random(), base: 0),
        ]
        #expect(
            await protocolError { _ = try await container.commit(allOrNothing: afterRefusal) }?.isInvalidRequest
                == true)
        let twice = FileID.random()
        let duplicating = [putRequest(twice, fileState("one")), putRequest(twice, fileState("two"))]
        #expect(
            await protocolError { _ = try await container.commit(allOrNothing: duplicating) }?.isInvalidRequest == true)
        let tooMany = (0...CommitBatch.maximumChanges).map { putRequest(.random(), fileState("f\($0)")) }
        #expect(await protocolError { _ = try await container.commit(allOrNothing: tooMany) }?.isInvalidRequest == true)
        #expect(try await container.wholeFeed() == [existing])

        #expect(try await container.commit(allOrNothing: []) == .committed([]))
        let next = try await container.mustPut(.random(), base: 0, fileState("next"))
        #expect(next.version == kind.nextVersion(after: existing.version))
    }

    /// The storage failing part-way stores nothing, as for a batch.
    @Test(arguments: ContainerKind.failingStorage)
    func aStorageFailurePartWayStoresNothing(kind: ContainerKind) async throws {
        let fixture = try await ContainerFixture.make(kind)
        defer { fixture.remove() }
        let container = fixture.container
        let existing = try await container.mustPut(.random(), base: 0, directoryState("existing"))
        try await StorageFailure.install(in: container)
        let requests = [
            putRequest(.random(), fileState("one")), putRequest(.random(), fileState(StorageFailure.name)),
            putRequest(.random(), fileState("three")),
        ]
        let error = await protocolError { _ = try await container.commit(allOrNothing: requests) }
        #expect(error != nil && error?.isInvalidRequest == false, "\(String(describing: error))")
        #expect(try await container.wholeFeed() == [existing])
        let next = try await container.mustPut(.random(), base: 0, fileState("next"))
        #expect(next.version == kind.nextVersion(after: existing.version))
    }
}
