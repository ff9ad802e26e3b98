import Foundation
import Synchronization

/// The embedded default container: a local directory, shared by every process that opens it
/// (two mounts on one machine follow each other through it).
///
/// Layout and formats: `LocalLayout`, doc/FORMATS.md "Local container". Entries and the version
/// counter live in `container.db` (`LocalEntryStore`), chunks in files (`LocalChunkStore`), and
/// commits are pushed to other processes through `changes.signal` (`LocalChangeSignal`).
///
/// Each instance has its own SQLite connection and its own inotify watch, as a separate process
/// would. Every operation first checks that the marker is still there (`unavailable` if not: an
/// unplugged disk is not an empty container), then does its blocking work on a Dispatch thread;
/// no lock is held across a suspension.
///
/// Beyond the `Container` contract: a chunk file whose payload was damaged on disk is returned as
/// stored (the reader's decoder detects it); one whose header is damaged is `corruptChunk`.
public final class LocalContainer: Container {
    public static let markerName = LocalLayout.markerName
    /// 1: the marker only (the first release). 2: `container.db`, `chunks/`, `changes.signal`.
    public static let formatVersion = 2
    /// How often a waiter re-reads the version counter even without a signal, while the signal
    /// may miss events (no inotify watch yet, or a network or FUSE filesystem).
    static let safetyRecheck: Duration = .seconds(1)
    /// The same while the signal is reliable (`LocalChangeSignal.isReliable`): an idle mount's
    /// follower then wakes every 15 s, not every second.
    static let reliableRecheck: Duration = .seconds(15)

    /// The re-check interval that applies now.
    var recheckInterval: Duration { signal.isReliable ? Self.reliableRecheck : Self.safetyRecheck }

    /// The container directory.
    public let path: String
    /// The container ID from the marker.
    public let id: String
    public var containerID: String { id }

    let layout: LocalLayout
    let entries: LocalEntryStore
    let chunks: LocalChunkStore
    let signal: LocalChangeSignal
    /// The newest version as waiters last read it (`latestVersion`).
    private let latestSeen = SharedVersionRead()
    /// How many times waiters read the newest version from the database (for tests).
    var latestVersionQueries: Int { latestSeen.reads.load(ordering: .relaxed) }

    init(layout: LocalLayout, id: String, entries: LocalEntryStore) {
        self.path = layout.root
        self.id = id
        self.layout = layout
        self.entries = entries
        self.chunks = LocalChunkStore(layout: layout)
        self.signal = LocalChangeSignal(path: layout.signalPath)
    }

    /// Closes the container's database now (its log checkpointed and removed), e.g. before its
    /// directory is renamed; a later call opens it again.
    public func closeDatabase() { entries.close() }

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try await LocalFileIO.offload { [layout, chunks] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            return try chunks.missing(hashes)
        }
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try ChunkValidation.check(chunk)
        try await LocalFileIO.offload { [layout, chunks] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            try chunks.store(chunk)
        }
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try await LocalFileIO.offload { [layout, chunks] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            return try chunks.load(hash)
        }
    }

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.entry(id) ?? (id == .root ? CommitRules.implicitRoot : nil)
        }
    }

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await LocalFileIO.offload { [entries, chunks, signal] () throws(ContainerProtocolError) in
            let outcome = try entries.commit(request, chunks: chunks)
            if case .committed = outcome { signal.post() }
            return outcome
        }
    }

    /// One database transaction for the whole batch, and one change signal for it.
    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try CommitBatch.check(requests)
        guard !requests.isEmpty else { return [] }
        return try await LocalFileIO.offload { [entries, chunks, signal] () throws(ContainerProtocolError) in
            let outcomes = try entries.commit(batch: requests, chunks: chunks)
            if outcomes.contains(where: { if case .committed = $0 { true } else { false } }) { signal.post() }
            return outcomes
        }
    }

    /// One database transaction, committed only if every change is (`LocalEntryStore`), and one
    /// change signal for it.
    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try CommitBatch.check(requests)
        guard !requests.isEmpty else { return .committed([]) }
        return try await LocalFileIO.offload { [entries, chunks, signal] () throws(ContainerProtocolError) in
            let answer = try entries.commit(allOrNothing: requests, chunks: chunks)
            if answer.isCommitted { signal.post() }
            return answer
        }
    }

    /// The chunk files are written and made durable together (`LocalChunkStore.store(batch:)`).
    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try CommitBatch.check(chunks)
        for chunk in chunks { try ChunkValidation.check(chunk) }
        guard !chunks.isEmpty else { return }
        try await LocalFileIO.offload { [layout, store = self.chunks] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            try store.store(batch: chunks)
        }
    }

    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        let limit = try FeedPosition.pageSize(limit)
        let after = try FeedPosition.version(of: cursor)
        let fetched = try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            let fetched = try entries.entries(after: after, limit: limit)
            // Only an empty page can be past the newest version (a cursor never given out).
            if fetched.isEmpty, after > 0 { try FeedPosition.checkGivenOut(after, newest: try entries.latestVersion()) }
            return fetched
        }
        return FeedPosition.batch(fetched, limit: limit, after: cursor)
    }

    /// The newest version, shared by every waiter of this instance (`SharedVersionRead`): a
    /// query per signal or per `recheckInterval`, not per waiter.
    private func latestVersion(atGeneration generation: UInt64) async throws(ContainerProtocolError) -> EntryVersion {
        try await latestSeen.latest(atGeneration: generation, maxAge: recheckInterval) {
            [entries] () throws(ContainerProtocolError) in
            try await LocalFileIO.offload { () throws(ContainerProtocolError) in try entries.latestVersion() }
        }
    }

    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        let after = try FeedPosition.version(of: cursor)
        signal.startWatching()
        let deadline = ChangeNotifier.deadline(after: timeout)
        var checkedCursor = false
        while true {
            let seen = signal.notifier.generation
            let latest = try await latestVersion(atGeneration: seen)
            if latest > after { return true }
            if latest < after, !checkedCursor {
                // Perhaps only the shared read is behind (a commit by another process not yet
                // signalled): refuse the cursor only if the database says so too.
                checkedCursor = true
                let newest = try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
                    try entries.latestVersion()
                }
                try FeedPosition.checkGivenOut(after, newest: newest)
                if newest > after { return true }
            }
            let now = ContinuousClock.now
            if now >= deadline || Task.isCancelled { return false }
            await signal.notifier.wait(since: seen, timeout: min(deadline - now, recheckInterval))
        }
    }
}
