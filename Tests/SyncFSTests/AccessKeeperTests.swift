import Foundation
import SyncBackend
import SyncBackendTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// A container that grants a role as a sync server does (`ContainerAccess`): while `granted` is
/// a viewer's it refuses chunk uploads and commits (`unavailable`, after telling the observers,
/// as `HTTPContainer` does for a `403 forbidden`); `reachable` false makes `refreshAccess` fail.
final class RoleGrantingContainer: ForwardingTestContainer, ContainerAccess {
    let base: InMemoryContainer
    let granted: Mutex<AccessRole>
    let reachable = Atomic<Bool>(true)
    let known: Mutex<AccessRole?>
    private let observers = Mutex<[@Sendable () -> Void]>([])

    init(base: InMemoryContainer = InMemoryContainer(), granted: AccessRole, known: AccessRole?) {
        self.base = base
        self.granted = Mutex(granted)
        self.known = Mutex(known)
    }

    var knownAccess: AccessRole? { known.withLock { $0 } }
    var accessScope: String { "box" }

    func refreshAccess() async throws(ContainerProtocolError) -> AccessRole {
        guard reachable.load(ordering: .relaxed) else { throw .unavailable("offline (test)") }
        let role = granted.withLock { $0 }
        known.withLock { $0 = role }
        return role
    }

    func onChangeRefused(_ observer: @escaping @Sendable () -> Void) { observers.withLock { $0.append(observer) } }

    private func admitChange() throws(ContainerProtocolError) {
        guard granted.withLock({ $0 }) == .viewer else { return }
        for observer in observers.withLock({ $0 }) { observer() }
        throw .unavailable("the server refused the token (403 forbidden, test)")
    }

    func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try admitChange()
        try await base.putChunk(chunk)
    }

    func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try admitChange()
        try await base.putChunks(chunks)
    }

    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try admitChange()
        return try await base.commit(request)
    }

    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try admitChange()
        return try await base.commit(batch: requests)
    }
}

/// The role bookkeeping of a mount (`AccessKeeper`, `WriteAccess`): the role the container
/// granted at the start, the one recorded for an offline start, a refused change read again.
@Suite struct AccessKeeperTests {
    private func engine(_ fixture: FileSystemFixture, _ container: any Container) -> SyncEngine {
        SyncEngine(fileSystem: fixture.fs, container: container, logger: .init(label: "t"))
    }

    @Test func theRoleTheContainerGrantedAtTheStartIsUsedAndRecorded() throws {
        let fixture = try FileSystemFixture()
        let events = fixture.fs.changeEvents.subscribe(.everything)
        let container = RoleGrantingContainer(granted: .viewer, known: .viewer)
        _ = engine(fixture, container)
        #expect(fixture.fs.writeAccess.refusesChanges)
        #expect(fixture.fs.writeAccess.role == .viewer)
        guard case .event(let event) = events.next(timeout: 5) else {
            Issue.record("no event for the role")
            return
        }
        #expect(event.kind == .access && event.message?.contains("a viewer's rights in 'box'") == true, "\(event)")
        try fixture.reopen()
        #expect(fixture.fs.storedFacts[.accessRole] == .viewer)
    }

    @Test func anOfflineStartKeepsTheRecordedViewerRole() throws {
        let fixture = try FileSystemFixture()
        _ = engine(fixture, RoleGrantingContainer(granted: .viewer, known: .viewer))
        try fixture.reopen()
        // The server is not reachable at this start: the container learnt no role.
        let offline = RoleGrantingContainer(granted: .viewer, known: nil)
        offline.reachable.store(false, ordering: .relaxed)
        let keeper = engine(fixture, offline).accessKeeper
        keeper.refresh()
        #expect(fixture.fs.writeAccess.refusesChanges, "an offline start of a viewer's mount must stay read-only")
    }

    @Test func aLocalContainerIsAlwaysWritable() throws {
        let fixture = try FileSystemFixture()
        let engine = engine(fixture, InMemoryContainer())
        #expect(!fixture.fs.writeAccess.refusesChanges)
        #expect(engine.status().access == nil)
    }

    @Test func aRefusedChangeReadsTheRoleAgainAndTheQueueWaitsForWriteAccess() throws {
        let fixture = try FileSystemFixture(uploadPolicy: SyncedPair.fastPolicy)
        // The mount started as an editor; the server made its token a viewer's since.
        let container = RoleGrantingContainer(granted: .viewer, known: .editor)
        let engine = engine(fixture, container)
        engine.start()
        defer { engine.stop() }
        #expect(!fixture.fs.writeAccess.refusesChanges)
        try fixture.makeFile("report.txt", contents: Array("draft".utf8))
        #expect(
            waitUntil { fixture.fs.writeAccess.refusesChanges },
            "the refused upload must make the mount read the role again")
        // Queued, never dropped, never sent while a viewer's.
        #expect(fixture.fs.outbox.activeCount == 1)
        #expect(engine.status().access?.role == .viewer)
        // An editor's rights again (found at the next reconnect): the change goes.
        container.granted.withLock { $0 = .editor }
        engine.accessKeeper.reconnected()
        #expect(waitUntil { fixture.fs.outbox.activeCount == 0 && !fixture.fs.writeAccess.refusesChanges })
        let feed = try Blocking.run { () async throws(ContainerProtocolError) in
            try await container.base.changes(after: .beginning, limit: 10)
        }
        #expect(feed.entries.contains { $0.state.name == Array("report.txt".utf8) })
    }
}
