import Foundation
import SyncBackend
import Synchronization

/// Whether the container answers, as this mount last saw it: the one "offline" condition
/// `status` shows (doc/SEMANTICS.md, "Offline"), instead of an error per file.
///
/// Offline from the first call that failed because the container could not be reached
/// (`unavailable`) until the next call that got any answer (a refusal, `busy` and a storage
/// failure are answers: the container is there). A mount starts online until a call says
/// otherwise.
///
/// A server that answers `storageUnavailable` is there (online) but cannot reach the storage
/// behind it: that is a state of its own, from the first such answer until the next call that
/// got any other answer, which `status` shows instead of "online" (`storageUnavailableSince`).
final class Reachability: Sendable {
    typealias Observer = @Sendable (_ online: Bool, _ reason: String?) -> Void
    typealias StorageObserver = @Sendable (_ away: Bool, _ reason: String?) -> Void

    private struct State {
        var since: Date?
        var storageAwaySince: Date?
        var observer: Observer?
        var storageObserver: StorageObserver?
    }

    private let state = Mutex(State())
    /// Held while observers are called, in the order of the changes, outside `state`'s lock:
    /// an observer takes other locks (`SyncRounds`) whose holders read `isOnline`, and under
    /// `state`'s lock that was a lock-order inversion — which Swift's `Mutex` on Linux does not
    /// hang on but traps ("Recursive call to lock Mutex", the kernel's EDEADLK): the daemon
    /// died at an offline start. Nothing takes this lock while holding `state`'s.
    private let notifying = Mutex(())

    init() {}

    /// When the current outage began; nil while online.
    var offlineSince: Date? { state.withLock { $0.since } }

    var isOnline: Bool { offlineSince == nil }

    /// When the server began answering that its storage is unavailable; nil otherwise.
    var storageUnavailableSince: Date? { state.withLock { $0.storageAwaySince } }

    /// Calls `observer` at each change between online and offline (with the failure that made it
    /// offline), one change at a time and in their order; it must not call back into this
    /// object's changes (`answered`, `unreachable`, `storageUnavailable`), reading it is fine.
    func onChange(_ observer: @escaping @Sendable (_ online: Bool, _ reason: String?) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// As `onChange`, for the server's storage: `away` at the first `storageUnavailable`
    /// answer (with its reason), not away at the next other answer.
    func onStorageChange(_ observer: @escaping @Sendable (_ away: Bool, _ reason: String?) -> Void) {
        state.withLock { $0.storageObserver = observer }
    }

    func answered() {
        change { state in
            var notices: [Notice] = []
            if state.storageAwaySince != nil {
                state.storageAwaySince = nil
                notices.append(.storage(away: false, reason: nil))
            }
            if state.since != nil {
                state.since = nil
                notices.append(.online(true, reason: nil))
            }
            return notices
        }
    }

    /// The server answered that the storage behind it cannot be reached: online, storage away.
    func storageUnavailable(_ reason: String, at now: Date = Date()) {
        change { state in
            var notices: [Notice] = []
            if state.since != nil {
                state.since = nil
                notices.append(.online(true, reason: nil))
            }
            if state.storageAwaySince == nil {
                state.storageAwaySince = now
                notices.append(.storage(away: true, reason: reason))
            }
            return notices
        }
    }

    func unreachable(_ reason: String, at now: Date = Date()) {
        change { state in
            guard state.since == nil else { return [] }
            state.since = now
            return [.online(false, reason: reason)]
        }
    }

    /// What an observer is told.
    private enum Notice {
        case online(Bool, reason: String?)
        case storage(away: Bool, reason: String?)
    }

    /// Applies `update` to the state under its lock, then tells the observers what it returned,
    /// in order, outside that lock (under `notifying`).
    private func change(_ update: (inout State) -> [Notice]) {
        notifying.withLock { _ in
            let (notices, observer, storageObserver) = state.withLock { state in
                (update(&state), state.observer, state.storageObserver)
            }
            for notice in notices {
                switch notice {
                case .online(let online, let reason): observer?(online, reason)
                case .storage(let away, let reason): storageObserver?(away, reason)
                }
            }
        }
    }
}

/// Forwards every call and tells `reachability` how it went: any answer is online, an
/// `unavailable` failure offline; other failures say nothing either way.
struct ReachabilityWatchingContainer: Container {
    let base: any Container
    let reachability: Reachability

    var containerID: String { base.containerID }

    private func watch<T>(_ call: () async throws(ContainerProtocolError) -> T) async throws(ContainerProtocolError)
        -> T
    {
        do throws(ContainerProtocolError) {
            let result = try await call()
            reachability.answered()
            return result
        } catch {
            switch error {
            case .unavailable: reachability.unreachable(error.description)
            case .storageUnavailable: reachability.storageUnavailable(error.description)
            case .busy, .storageFailure, .chunkNotFound, .corruptChunk, .invalidRequest: reachability.answered()
            }
            throw error
        }
    }

    func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await watch { () async throws(ContainerProtocolError) in try await base.missingChunks(hashes) }
    }

    func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await watch { () async throws(ContainerProtocolError) in try await base.putChunk(chunk) }
    }

    func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await watch { () async throws(ContainerProtocolError) in try await base.putChunks(chunks) }
    }

    func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try await watch { () async throws(ContainerProtocolError) in try await base.chunk(hash) }
    }

    func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await watch { () async throws(ContainerProtocolError) in try await base.entry(id) }
    }

    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await watch { () async throws(ContainerProtocolError) in try await base.commit(request) }
    }

    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await watch { () async throws(ContainerProtocolError) in try await base.commit(batch: requests) }
    }

    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome {
        try await watch { () async throws(ContainerProtocolError) in try await base.commit(allOrNothing: requests) }
    }

    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        try await watch { () async throws(ContainerProtocolError) in try await base.changes(after: cursor, limit: limit)
        }
    }

    func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool {
        try await watch { () async throws(ContainerProtocolError) in
            try await base.waitForChanges(after: cursor, timeout: timeout)
        }
    }

    func treeDigest() async throws(ContainerProtocolError) -> TreeDigest {
        try await watch { () async throws(ContainerProtocolError) in try await base.treeDigest() }
    }
}
