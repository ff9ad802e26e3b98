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
    /// The last version a waiter read, at which signal generation and when (`latestVersion`).
    /// How many times waiters read the newest version from the database (for tests).
    let latestVersionQueries = Atomic<Int>(0)
    private let latestSeen = Mutex(LatestVersionState())

    init(layout: LocalLayout, id: String, entries: LocalEntryStore) {
        self.path = layout.root
        self.id = id
        self.layout = layout
        self.entries = entries
        self.chunks = LocalChunkStore(layout: layout)
        self.signal = LocalChangeSignal(path: layout.signalPath)
    }

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

    /// The newest version, shared by every waiter of this instance: read from the database only
    /// when no waiter has read it since the change signal last moved (`generation`) or at least
    /// `recheckInterval` ago. So N idle waiters (a server's pending long polls) cost about one
    /// query per `recheckInterval`, not N, and a commit costs one query, not one per waiter.
    ///
    /// Correct because the generation is read *before* the query: a commit the query missed
    /// posts the signal afterwards, moving the generation, and the next look queries again; a
    /// lost signal is caught by the age bound, as before.
    private func latestVersion(atGeneration generation: UInt64) async throws(ContainerProtocolError) -> EntryVersion {
        let now = ContinuousClock.now
        let read = latestSeen.withLock { state -> LatestVersionRead in
            if let cached = state.cached, cached.generation == generation, now - cached.readAt < recheckInterval {
                return .known(cached.version)
            }
            // Waiters that look at once share one query (no stampede of first looks).
            if let reading = state.reading, reading.generation == generation { return .reading(reading.task) }
            latestVersionQueries.add(1, ordering: .relaxed)
            let task = Task { [entries] () -> Result<EntryVersion, ContainerProtocolError> in
                do throws(ContainerProtocolError) {
                    return .success(
                        try await LocalFileIO.offload { () throws(ContainerProtocolError) in try entries.latestVersion()
                        })
                } catch {
                    return .failure(error)
                }
            }
            state.reading = (generation, now, task)
            return .reading(task)
        }
        switch read {
        case .known(let version):
            return version
        case .reading(let task):
            let result = await task.value
            latestSeen.withLock { state in
                guard let reading = state.reading, reading.task == task else { return }
                state.reading = nil  // a failed read is not shared beyond the waiters already on it
                if case .success(let version) = result {
                    state.cached = (reading.generation, version, reading.startedAt)
                }
            }
            return try result.get()
        }
    }

    private enum LatestVersionRead {
        case known(EntryVersion)
        case reading(Task<Result<EntryVersion, ContainerProtocolError>, Never>)
    }

    /// The newest version waiters last read and the read in progress, if any (`latestVersion`).
    private struct LatestVersionState {
        var cached: (generation: UInt64, version: EntryVersion, readAt: ContinuousClock.Instant)?
        var reading:
            (
                generation: UInt64, startedAt: ContinuousClock.Instant,
                task: Task<Result<EntryVersion, ContainerProtocolError>, Never>
            )?
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
