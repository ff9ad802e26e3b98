import Foundation
import SyncBackend
import Synchronization

/// One container reached through several sync servers (`mount http://a/box,http://b/box`;
/// doc/CLI.md, "Several servers"): `serve` processes on one database and bucket, so any of
/// them answers for the same container.
///
/// The contract, beyond `HTTPContainer`'s (each server is one):
/// - **Only "no answer" moves a call to another server**: a connection refused or reset, a TLS
///   failure, a request past its deadline, an answer that broke off (`NoAnswerProbe`). The call is
///   then made again at once on the next server in order, so a server killed under a mount costs
///   its callers no more than a reconnection. Any HTTP answer — a refusal of the request, a
///   `412` container mismatch, a 5xx, busy — is the call's result, given to the caller as
///   `HTTPContainer` gives it: a server that answers is never skipped over its answer.
/// - **Order and coming back**: calls go to the first server (in the order given) that is not
///   marked down. A server that gave no answer is marked down for 30 s, doubling after each
///   further failure up to 5 min; once that passes it is asked again (so the mount returns to
///   the first server when it is back). When every server is down, each is tried in order.
/// - Every server must be the same container: each request names `containerID`, and a server
///   whose container has another ID answers `412` (never a sync against another container);
///   `ServerContainer` also checks each reachable server's ID before the mount starts.
/// - `onSwitch` is called (outside any lock) when a call is answered by another server than the
///   previous answer's — also for the first answer — with the server now used and why.
public final class FailoverContainer: Container {
    public let servers: [HTTPContainer]
    public let containerID: String
    private let onSwitch: @Sendable (FailoverSwitch) -> Void
    private let state = Mutex(State())
    /// `ServerSwitching` observers, called after `onSwitch`.
    private let switchObservers = Mutex<[@Sendable () -> Void]>([])

    /// How long a server that gave no answer is left alone at first (doubling, up to 5 min).
    let firstPause: Duration
    static let longestPause: Duration = .seconds(300)

    private struct State {
        /// The server of the last answer.
        var current: Int?
        /// Why the server before `current` was left (its last failure), for the next switch.
        var lastFailure: (server: Int, message: String)?
        var downUntil: [Int: ContinuousClock.Instant] = [:]
        var failuresInARow: [Int: Int] = [:]
    }

    /// `servers` (at least one) must all have `containerID`. `firstPause`: 30 s (shorter in tests).
    public init(
        servers: [HTTPContainer], firstPause: Duration = .seconds(30),
        onSwitch: @escaping @Sendable (FailoverSwitch) -> Void = { _ in }
    ) {
        precondition(!servers.isEmpty, "a FailoverContainer needs a server")
        self.servers = servers
        self.firstPause = firstPause
        self.containerID = servers[0].containerID
        self.onSwitch = onSwitch
    }

    /// The server calls go to now (the last to answer, else the first).
    public var currentServer: ServerAddress { servers[state.withLock { $0.current } ?? 0].address }

    /// The order in which the next call tries the servers: those not marked down in the given
    /// order, then the marked ones in the given order.
    func order(now: ContinuousClock.Instant = .now) -> [Int] {
        state.withLock { state in
            let up = servers.indices.filter { (state.downUntil[$0] ?? now) <= now }
            return up + servers.indices.filter { !up.contains($0) }
        }
    }

    /// `body` on one server after another until one answers (see the type's contract).
    private func call<Value: Sendable>(
        _ body: @Sendable (HTTPContainer) async throws(ContainerProtocolError) -> Value
    ) async throws(ContainerProtocolError) -> Value {
        var failure: ContainerProtocolError?
        for index in order() {
            let probe = NoAnswerProbe()
            let result: Result<Value, ContainerProtocolError> = await NoAnswerProbe.$current.withValue(probe) {
                do throws(ContainerProtocolError) {
                    return .success(try await body(servers[index]))
                } catch {
                    return .failure(error)
                }
            }
            switch result {
            case .success(let value):
                answered(by: index)
                return value
            case .failure(let error):
                guard probe.gotNoAnswer, !Task.isCancelled else {
                    answered(by: index)
                    throw error
                }
                markDown(index, error)
                failure = error
            }
        }
        throw failure ?? .unavailable("no server to ask")
    }

    private func answered(by index: Int) {
        let change: FailoverSwitch? = state.withLock { state in
            state.downUntil[index] = nil
            state.failuresInARow[index] = nil
            guard state.current != index else { return nil }
            // The server left: the one used before, or (at the first answer) the one that failed.
            let failed = state.lastFailure.flatMap { $0.server == index ? nil : $0 }
            let previous = state.current ?? failed?.server
            state.current = index
            let why = failed.flatMap { $0.server == previous ? $0.message : nil }
            return FailoverSwitch(
                server: servers[index].address, previous: previous.map { servers[$0].address }, reason: why)
        }
        if let change {
            onSwitch(change)
            for observer in switchObservers.withLock({ $0 }) { observer() }
        }
    }

    private func markDown(_ index: Int, _ error: ContainerProtocolError) {
        state.withLock { state in
            let failures = (state.failuresInARow[index] ?? 0) + 1
            state.failuresInARow[index] = failures
            state.downUntil[index] = .now + pause(afterFailures: failures)
            state.lastFailure = (index, "\(error)")
        }
    }

    /// How long a server is left alone after `failures` calls in a row got no answer from it.
    func pause(afterFailures failures: Int) -> Duration {
        min(firstPause * (1 << min(max(failures - 1, 0), 4)), Self.longestPause)
    }

    // MARK: Container

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await call { server throws(ContainerProtocolError) in try await server.missingChunks(hashes) }
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await call { server throws(ContainerProtocolError) in try await server.putChunk(chunk) }
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try await call { server throws(ContainerProtocolError) in try await server.chunk(hash) }
    }

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await call { server throws(ContainerProtocolError) in try await server.entry(id) }
    }

    /// A commit whose answer was lost may have been applied: asking again (here, or the engine
    /// later) is the protocol's ordinary retry — the compare-and-swap answers it.
    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await call { server throws(ContainerProtocolError) in try await server.commit(request) }
    }

    /// As `commit`: a batch whose answer was lost may have been applied, and asking again is the
    /// ordinary retry (each change's compare-and-swap answers it).
    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await call { server throws(ContainerProtocolError) in try await server.commit(batch: requests) }
    }

    /// As `commit(batch:)`: an all-or-nothing commit whose answer was lost may have been applied,
    /// and asking again is the ordinary retry (the first change's compare-and-swap then refuses
    /// the whole of it, naming the entry as it now stands).
    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try await call { server throws(ContainerProtocolError) in try await server.commit(allOrNothing: requests) }
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await call { server throws(ContainerProtocolError) in try await server.putChunks(chunks) }
    }

    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        try await call { server throws(ContainerProtocolError) in try await server.changes(after: cursor, limit: limit)
        }
    }

    /// The wait moves to the next server with what is left of `timeout`.
    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        let deadline = ContinuousClock.now + timeout
        return try await call { server throws(ContainerProtocolError) in
            try await server.waitForChanges(after: cursor, timeout: max(.zero, deadline - .now))
        }
    }
}

/// The tree digest, from whichever server answers (as every other call), and the switches seen.
extension FailoverContainer: ServerSwitching {
    public func treeDigest() async throws(ContainerProtocolError) -> TreeDigest {
        try await call { server throws(ContainerProtocolError) in try await server.treeDigest() }
    }

    public func observeSwitches(_ observer: @escaping @Sendable () -> Void) {
        switchObservers.withLock { $0.append(observer) }
    }
}

/// Version history, from whichever server answers (as every other call).
extension FailoverContainer: ContainerHistory {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        try await call { server throws(ContainerProtocolError) in try await server.history(of: id, limit: limit) }
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        try await call { server throws(ContainerProtocolError) in
            try await server.deletedEntries(before: before, limit: limit)
        }
    }
}

/// A failover container's change of server (`FailoverContainer.onSwitch`).
public struct FailoverSwitch: Sendable, Equatable {
    /// The server now used.
    public let server: ServerAddress
    /// The server used before (nil for the first answer).
    public let previous: ServerAddress?
    /// Why `previous` was left: its last call's failure (nil when it was not left for a failure,
    /// e.g. coming back to the first server).
    public let reason: String?
}

/// Set by `HTTPContainer` when a call made under it got no answer at all (no connection, reset,
/// TLS failure, deadline, an answer that broke off): the one kind of failure
/// `FailoverContainer` moves to another server for. One probe per call (a task-local value), so
/// concurrent calls never see each other's.
final class NoAnswerProbe: Sendable {
    @TaskLocal static var current: NoAnswerProbe?
    private let flag = Atomic(false)

    var gotNoAnswer: Bool { flag.load(ordering: .relaxed) }
    func noteNoAnswer() { flag.store(true, ordering: .relaxed) }
}

/// Cross-mount locks, from whichever server answers (every server of the list serves the same
/// container, so its locks).
extension FailoverContainer: ContainerLocks {
    public func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        try await call { server throws(ContainerProtocolError) in
            try await server.lock(claim, leaseSeconds: leaseSeconds)
        }
    }

    public func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        try await call { server throws(ContainerProtocolError) in try await server.unlock(release) }
    }

    public func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError)
        -> [HeldLock]
    {
        try await call { server throws(ContainerProtocolError) in
            try await server.renewLocks(session: session, leaseSeconds: leaseSeconds)
        }
    }

    public func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try await call { server throws(ContainerProtocolError) in try await server.releaseLocks(session: session) }
    }

    public func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        try await call { server throws(ContainerProtocolError) in try await server.locks(on: fileID) }
    }
}

/// The token's role, from whichever server answers (as every other call); a refused change on
/// any server is reported.
extension FailoverContainer: ContainerAccess {
    public var knownAccess: AccessRole? {
        let current = state.withLock { $0.current } ?? 0
        return servers[current].knownAccess ?? servers.lazy.compactMap(\.knownAccess).first
    }

    public var accessScope: String { servers[0].accessScope }

    public func refreshAccess() async throws(ContainerProtocolError) -> AccessRole {
        try await call { server throws(ContainerProtocolError) in try await server.refreshAccess() }
    }

    public func onChangeRefused(_ observer: @escaping @Sendable () -> Void) {
        for server in servers { server.onChangeRefused(observer) }
    }
}
