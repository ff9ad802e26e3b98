import SyncBackend
import Synchronization

/// A container that lies, for tests of the trust boundary: it wraps an `InMemoryContainer` and
/// serves, besides what was committed to it, any `RemoteEntry` a test injects (`inject`),
/// bypassing every commit rule (names `..`, cycles, a root that is a file, sizes that disagree
/// with manifests, …), and any chunk answer a test sets (`answerChunk`).
///
/// Injected entries take their place in the change feed in the order they were injected,
/// interleaved with the commits made to `base` (by the test or the engine under test): each
/// injection burns the next container-wide version of `base` (a put of the root that changes
/// nothing, hidden from the feed) and the injected entry carries that version. So the feed stays
/// ordered by version, the cursors are `base`'s, and `waitForChanges` wakes on an injection.
///
/// For an ID present both in `base` and injected, the feed and `entry` answer whichever has the
/// higher version (an injection after a commit wins; a later commit wins over it). Commits go to
/// `base` and follow its rules, which know nothing of the injected entries.
public final class HostileContainer: Container {
    private struct State {
        /// Injected entries by ID (the latest injection of each).
        var injected: [FileID: RemoteEntry] = [:]
        /// Versions of `base` used up by injections (root puts hidden from the feed).
        var burnedVersions: Set<EntryVersion> = []
        /// Chunk answers that replace `base`'s.
        var chunkAnswers: [ChunkHash: EncodedChunk] = [:]
        /// History answers that replace `base`'s, by entry.
        var historyAnswers: [FileID: [HistoricVersion]] = [:]
        /// Injections begun, and those begun but not recorded yet (their version is burned in
        /// `base` but not known here: a page read meanwhile would show a plain root put instead).
        var injectionsBegun = 0
        var injectionsPending = 0
    }

    public let base: InMemoryContainer
    private let state = Mutex(State())

    public init(base: InMemoryContainer = InMemoryContainer()) {
        self.base = base
    }

    public var containerID: String { base.containerID }

    // MARK: Lying

    /// Puts `entry` into the feed at the next version (its own `version` is replaced) and returns
    /// it as served. Nothing about it is checked.
    @discardableResult
    public func inject(_ entry: RemoteEntry) async throws(ContainerProtocolError) -> RemoteEntry {
        state.withLock { state in
            state.injectionsBegun += 1
            state.injectionsPending += 1
        }
        defer { state.withLock { $0.injectionsPending -= 1 } }
        let version = try await burnVersion()
        var served = entry
        served.version = version
        state.withLock { state in
            state.injected[entry.id] = served
            state.burnedVersions.insert(version)
        }
        return served
    }

    /// Injects a live entry with `state` made by device "hostile".
    @discardableResult
    public func inject(_ id: FileID, _ entryState: EntryState, deleted: Bool = false)
        async throws(ContainerProtocolError) -> RemoteEntry
    {
        try await inject(RemoteEntry(id: id, version: 0, isDeleted: deleted, device: "hostile", state: entryState))
    }

    /// From now on, `chunk(hash)` answers `chunk` (which may be of another hash, length or payload).
    public func answerChunk(_ hash: ChunkHash, with chunk: EncodedChunk) {
        state.withLock { $0.chunkAnswers[hash] = chunk }
    }

    /// From now on, `history(of: id)` answers `versions` (anything: other entries, bad names,
    /// any order).
    public func answerHistory(of id: FileID, with versions: [HistoricVersion]) {
        state.withLock { $0.historyAnswers[id] = versions }
    }

    /// A put of the root that changes nothing: the next version of `base`.
    private func burnVersion() async throws(ContainerProtocolError) -> EntryVersion {
        // Concurrent injections (or a root commit) race for the root's base version: retry.
        while true {
            guard let root = try await base.entry(.root) else { throw .storageFailure("the base has no root") }
            let outcome = try await base.commit(
                CommitRequest(id: .root, baseVersion: root.version, change: .put(root.state), device: root.device))
            switch outcome {
            case .committed(let entry): return entry.version
            case .versionConflict: continue
            default: throw .storageFailure("the base refused a no-op root put: \(outcome)")
            }
        }
    }

    /// `stored` unless an injection of the same ID is newer; nil for a hidden root put.
    private func visible(_ stored: RemoteEntry, _ state: State) -> RemoteEntry? {
        if let injected = state.injected[stored.id], injected.version >= stored.version { return injected }
        if stored.id == .root && state.burnedVersions.contains(stored.version) { return nil }
        return stored
    }

    // MARK: Container

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await base.missingChunks(hashes)
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await base.putChunk(chunk)
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        if let answer = state.withLock({ $0.chunkAnswers[hash] }) { return answer }
        return try await base.chunk(hash)
    }

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        let stored = try await base.entry(id)
        return state.withLock { state -> RemoteEntry? in
            guard let stored else { return state.injected[id] }
            if let injected = state.injected[id], injected.version >= stored.version { return injected }
            return stored
        }
    }

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await base.commit(request)
    }

    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await base.commit(batch: requests)
    }

    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try await base.commit(allOrNothing: requests)
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try await base.putChunks(chunks)
    }

    /// `base`'s page, with hidden root puts dropped and the injected entries whose versions fall
    /// in the page's range merged in (newest version per ID, in version order).
    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        let after = try FeedPosition.version(of: cursor)
        let page = try await consistentPage(after: cursor, limit: limit)
        let through = try FeedPosition.version(of: page.cursor)
        let entries = state.withLock { state -> [RemoteEntry] in
            var newest: [FileID: RemoteEntry] = [:]
            let stored = page.entries.compactMap { visible($0, state) }
            let injected = state.injected.values.filter { $0.version > after && $0.version <= through }
            for entry in stored + injected where entry.version > after && entry.version <= through {
                if let known = newest[entry.id], known.version >= entry.version { continue }
                newest[entry.id] = entry
            }
            return newest.values.sorted { $0.version < $1.version }
        }
        return ChangeBatch(entries: entries, cursor: page.cursor, moreComing: page.moreComing)
    }

    /// `base`'s page, read while no injection was under way (else it might hold a burned version
    /// not yet known as one).
    private func consistentPage(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError)
        -> ChangeBatch
    {
        while true {
            let (begun, pending) = state.withLock { ($0.injectionsBegun, $0.injectionsPending) }
            if pending > 0 {
                try? await Task.sleep(for: .milliseconds(1))
                continue
            }
            let page = try await base.changes(after: cursor, limit: limit)
            if state.withLock({ $0.injectionsBegun }) == begun { return page }
        }
    }

    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        try await base.waitForChanges(after: cursor, timeout: timeout)
    }
}

/// `base`'s history, except the answers a test forged (`answerHistory`).
extension HostileContainer: ContainerHistory {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        if let forged = state.withLock({ $0.historyAnswers[id] }) { return forged }
        return try await base.history(of: id, limit: limit)
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        try await base.deletedEntries(before: before, limit: limit)
    }
}

/// `base`'s locks (a lying server's lock answers are tested at the protocol boundary, where the
/// client validates them: `Tests/SyncServerTests/LockEndpointTests.swift`).
extension HostileContainer: LocksForwardingWrapper {
    public func admittedLocks() async throws(ContainerProtocolError) -> any ContainerLocks { base }
}
