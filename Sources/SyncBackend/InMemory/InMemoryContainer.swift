import Foundation
import Synchronization

/// A container held in memory, for tests: the reference implementation of the `Container`
/// contract (the same commit rules as every container, `CommitRules`), with nothing persisted.
///
/// All state sits behind one `Mutex`; every call takes it once, briefly, and never across a
/// suspension. `waitForChanges` suspends on a `ChangeNotifier` that `commit` wakes directly, so a
/// waiter returns as soon as a commit lands (no polling).
public final class InMemoryContainer: Container {
    struct State {
        var entries: [FileID: RemoteEntry] = [:]
        var chunks: [ChunkHash: EncodedChunk] = [:]
        /// The latest version handed out (0 before the first commit).
        var version: EntryVersion = 0
        /// History (`InMemoryContainer+History.swift`): when each current entry was committed,
        /// the tombstones purged out of the trash, the superseded versions of each entry (oldest
        /// first), when each chunk was last stored, and the retention policy.
        var committedAt: [FileID: Int64] = [:]
        var purged: Set<FileID> = []
        var superseded: [FileID: [HistoricVersion]] = [:]
        var storedAt: [ChunkHash: Int64] = [:]
        var retention = RetentionPolicy()
        /// Every lock of the container (`InMemoryContainer+Locks.swift`).
        var locks = LockTable()
    }

    public let containerID: String
    let state = Mutex(State())
    private let notifier = ChangeNotifier()

    public init(containerID: String = UUID().uuidString.lowercased()) {
        self.containerID = containerID
    }

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        state.withLock { state in hashes.filter { state.chunks[$0] == nil } }
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try ChunkValidation.check(chunk)
        state.withLock { state in
            if state.chunks[chunk.hash] == nil { state.chunks[chunk.hash] = chunk }
            state.storedAt[chunk.hash] = WallClock.nanoseconds()
        }
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        guard let chunk = state.withLock({ $0.chunks[hash] }) else { throw .chunkNotFound(hash) }
        return chunk
    }

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        state.withLock { state in state.entries[id] ?? (id == .root ? CommitRules.implicitRoot : nil) }
    }

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        let outcome = try state.withLock { (state: inout State) throws(ContainerProtocolError) -> CommitOutcome in
            try state.apply(request)
        }
        if case .committed = outcome { notifier.notify() }
        return outcome
    }

    /// The batch is decided on a copy of the state, which replaces the state only once every
    /// change was decided: a change that throws leaves the state as it was.
    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try CommitBatch.check(requests)
        let outcomes = try state.withLock { (state: inout State) throws(ContainerProtocolError) -> [CommitOutcome] in
            var working = state
            let outcomes = try working.apply(batch: requests)
            try CommitBatch.checkAnswer(outcomes)
            state = working
            return outcomes
        }
        if outcomes.contains(where: { if case .committed = $0 { true } else { false } }) { notifier.notify() }
        return outcomes
    }

    /// Decided on a copy of the state as a batch is, which replaces the state only if every
    /// change was committed.
    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try CommitBatch.check(requests)
        let answer = try state.withLock { (state: inout State) throws(ContainerProtocolError) -> AllOrNothingOutcome in
            var working = state
            let answer = AllOrNothingOutcome(deciding: try working.apply(batch: requests))
            try CommitBatch.checkAnswer(answer)
            if answer.isCommitted { state = working }
            return answer
        }
        if case .committed(let entries) = answer, !entries.isEmpty { notifier.notify() }
        return answer
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try CommitBatch.check(chunks)
        for chunk in chunks { try ChunkValidation.check(chunk) }
        state.withLock { state in
            let now = WallClock.nanoseconds()
            for chunk in chunks {
                if state.chunks[chunk.hash] == nil { state.chunks[chunk.hash] = chunk }
                state.storedAt[chunk.hash] = now
            }
        }
    }

    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        let limit = try FeedPosition.pageSize(limit)
        let after = try FeedPosition.version(of: cursor)
        let fetched = state.withLock { state in
            state.entries.values.filter { $0.version > after }.sorted { $0.version < $1.version }.prefix(limit + 1)
        }
        return FeedPosition.batch(Array(fetched), limit: limit, after: cursor)
    }

    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        let after = try FeedPosition.version(of: cursor)
        let deadline = ChangeNotifier.deadline(after: timeout)
        while true {
            let seen = notifier.generation
            if state.withLock({ $0.version }) > after { return true }
            let now = ContinuousClock.now
            if now >= deadline || Task.isCancelled { return false }
            await notifier.wait(since: seen, timeout: deadline - now)
        }
    }

    /// The commit rules' view of the state, inside the lock.
    fileprivate struct Lookup: CommitLookup {
        let state: State

        func storedEntry(_ id: FileID) -> RemoteEntry? { state.entries[id] }

        func liveChild(of parent: FileID, named name: [UInt8]) -> RemoteEntry? {
            state.entries.values.first { !$0.isDeleted && $0.state.parent == parent && $0.state.name == name }
        }

        func hasLiveChildren(_ directory: FileID) -> Bool {
            state.entries.values.contains { !$0.isDeleted && $0.state.parent == directory }
        }

        func missingChunks(_ hashes: [ChunkHash]) -> [ChunkHash] { hashes.filter { state.chunks[$0] == nil } }
    }
}

extension InMemoryContainer.State {
    /// Decides and applies `requests` in order (`apply` each), the caller holding the lock.
    mutating func apply(batch requests: [CommitRequest]) throws(ContainerProtocolError) -> [CommitOutcome] {
        var outcomes: [CommitOutcome] = []
        outcomes.reserveCapacity(requests.count)
        for request in requests { outcomes.append(try apply(request)) }
        return outcomes
    }

    /// Decides `request` against this state and applies it if allowed (the caller holds the lock).
    mutating func apply(_ request: CommitRequest) throws(ContainerProtocolError) -> CommitOutcome {
        switch try CommitRules.decide(request, in: InMemoryContainer.Lookup(state: self)) {
        case .refuse(let outcome):
            return outcome
        case .apply(let isDeleted, let entryState):
            version += 1
            let entry = RemoteEntry(
                id: request.id, version: version, isDeleted: isDeleted, device: request.device, state: entryState)
            let now = WallClock.nanoseconds()
            keepSuperseded(request.id, replacedAt: now)
            entries[request.id] = entry
            committedAt[request.id] = now
            purged.remove(request.id)
            return .committed(entry)
        }
    }
}
