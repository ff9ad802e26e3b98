import Foundation
import Logging
import SyncBackend
import Synchronization

/// The sync engine of one mount: an uploader that drains the outbox into the container and a
/// follower that applies the container's change feed to the folder.
///
/// Both run on threads of their own and call Core synchronously; container calls go through
/// `BlockingContainer`. Nothing here holds Core's lock across a container call.
public final class SyncEngine: Sendable {
    public struct Options: Sendable {
        /// zlib level for uploads (1 is fast and still shrinks text 3–4×).
        public var compressionLevel: Int32 = 1
        /// How long the follower waits on the feed before checking again anyway.
        public var feedWait: Duration = .seconds(30)
        /// Bytes of local content to keep at most (nil: no limit); see `enforceBudget`.
        public var cacheBudget: Int64?
        /// The merge commands this machine allows (`merge=command:NAME`); default: none.
        public var mergeCommands = LocalMergeCommands.none
        public init() {}
    }

    let fileSystem: SyncFileSystem
    /// The container as the engine's threads call it (synchronous, one error mapping).
    let container: BlockingContainer
    let options: Options
    let logger: Logger
    let transfer: ContentTransfer
    let state = Mutex(State())
    /// Ends the follower's wait on the feed at `stop`.
    let stopWaiting = CancelHandle()
    /// Ends the engine threads' pauses (failure backoff, the budget keeper's sleep) at `stop`.
    let stopSleeping = StopSignal()
    /// Files for the background downloader.
    let downloads = DownloadQueue()
    /// Remote entries refused by `RemoteEntryValidation` (shown by `status`).
    let refusals: RemoteEntryRefusals
    /// Whether the container answers (`status`: online, or offline since when).
    let reachability = Reachability()
    /// How many rounds each refused directory delete or move has waited for other queued changes
    /// (`ConflictDecision.Situation.roundsWaited`); cleared when it is resolved.
    let waitsForOthers = Mutex<[FileID: Int]>([:])
    /// Runs `merge=command:` merges off the uploader (one slow command delays only its file).
    let mergeWorker: MergeCommandWorker

    struct State {
        var running = true
        var totals = ContentTransfer.Totals()
        /// The last container failure seen by either thread, cleared by a success.
        var lastFailure: String?
        var followerReady = false
        /// The follower applied everything the feed had at its last look.
        var feedCaughtUp = false
        var uploaderDone = false
        var followerDone = false
        var downloaderDone = false
        /// True when there is no budget keeper, or once it has ended.
        var keeperDone = true
        var rulesCheckerDone = false
    }

    public init(fileSystem: SyncFileSystem, container: any Container, options: Options = Options(), logger: Logger) {
        self.fileSystem = fileSystem
        // Every entry the container sends is checked before anything is done with it; refusals
        // are shown by `status` and logged once per entry.
        let refusals = RemoteEntryRefusals()
        let validated = ValidatingContainer(
            base: container,
            refused: { entry, reason in refusals.refuse(entry, because: reason, logger: logger) },
            accepted: { entry in refusals.clear(ifNewer: entry) })
        // Every answer of the container lets changes that failed only because it was away go now.
        let reachability = self.reachability
        reachability.onChange { [fileSystem] online, reason in
            Self.reachabilityChanged(online: online, reason: reason, fileSystem: fileSystem)
        }
        let watched = ReachabilityWatchingContainer(base: validated, reachability: reachability)
        let container = BlockingContainer(
            base: AnsweringContainer(watched) { [outbox = fileSystem.outbox] in outbox.containerAnswered() })
        self.container = container
        self.refusals = refusals
        mergeWorker = MergeCommandWorker(outbox: fileSystem.outbox)
        self.options = options
        self.logger = logger
        transfer = ContentTransfer(container: container, compressionLevel: options.compressionLevel)
    }

    /// Starts the uploader, the follower, the background downloader and the budget keeper, and
    /// becomes the file system's source of placeholder content.
    public func start() {
        fileSystem.setChunkSource(self)
        let downloads = self.downloads
        fileSystem.setPinObserver { [activity = fileSystem.contentActivity] in
            downloads.poke()
            activity.note()  // an unpinned file may now be evicted
        }
        let downloader = Thread { [self] in
            runDownloader()
            state.withLock { $0.downloaderDone = true }
        }
        downloader.name = "syncfs-downloader"
        downloader.start()
        if let budget = options.cacheBudget {
            state.withLock { $0.keeperDone = false }
            let keeper = Thread { [self] in
                runBudgetKeeper(budget)
                state.withLock { $0.keeperDone = true }
            }
            keeper.name = "syncfs-cache"
            keeper.start()
        }
        let rulesChecker = Thread { [self] in
            runRulesChecker()
            state.withLock { $0.rulesCheckerDone = true }
        }
        rulesChecker.name = "syncfs-rules"
        rulesChecker.start()
        let uploader = Thread { [self] in
            runUploader()
            state.withLock { $0.uploaderDone = true }
        }
        uploader.name = "syncfs-uploader"
        uploader.start()
        let follower = Thread { [self] in
            runFollower()
            state.withLock { $0.followerDone = true }
        }
        follower.name = "syncfs-follower"
        follower.start()
    }

    /// Stops both threads (an upload in progress finishes its current call) and waits for them.
    public func stop() {
        state.withLock { $0.running = false }
        fileSystem.setChunkSource(nil)
        fileSystem.setPinObserver(nil)
        downloads.stop()
        mergeWorker.stop()
        stopWaiting.cancel()
        stopSleeping.stop()
        fileSystem.contentActivity.note()
        fileSystem.rulesWatch.poke()
        fileSystem.outbox.poke()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if state.withLock({
                $0.uploaderDone && $0.followerDone && $0.downloaderDone && $0.keeperDone && $0.rulesCheckerDone
            }) {
                return
            }
            fileSystem.outbox.poke()
            Thread.sleep(forTimeInterval: EngineDelay.stopPoll / .seconds(1))
        }
        logger.warning("the sync engine did not stop within 10 s")
    }

    var isRunning: Bool { state.withLock { $0.running } }

    /// Sleeps `duration`, or less if the engine stops meanwhile (no polling).
    func sleepWhileRunning(_ duration: Duration) { stopSleeping.sleep(for: duration) }

    /// The container answers (`Reachability`: the one online/offline state of the mount).
    var isOnline: Bool { reachability.isOnline }

    func markCaughtUp(_ value: Bool) { state.withLock { $0.feedCaughtUp = value } }

    /// Records the last container failure (nil: a call succeeded), shown by `status`.
    func noteFailure(_ failure: String?) { state.withLock { $0.lastFailure = failure } }

    /// Each change between answering and not answering: `online`/`offline` published once (not
    /// once per retry), in the order seen; a rules file left unread while offline is read now.
    private static func reachabilityChanged(online: Bool, reason: String?, fileSystem: SyncFileSystem) {
        if online { fileSystem.rulesWatch.touched() }
        fileSystem.changeEvents.publish(
            ChangeEvent(
                kind: online ? .online : .offline, path: "", origin: nil, fileID: nil, type: nil,
                message: reason.map(RulesWatch.printableLine)))
    }

    func addTotals(_ totals: ContentTransfer.Totals) { state.withLock { $0.totals.add(totals) } }

    /// What `syncfs-mount status` and `sync` show.
    public func status() -> SyncStatus {
        let items = fileSystem.outbox.items
        let (failure, totals, caughtUp) = state.withLock { ($0.lastFailure, $0.totals, $0.feedCaughtUp) }
        let usage = fileSystem.cacheUsage()
        let offlineSince = reachability.offlineSince
        var status = SyncStatus(
            pendingEntries: items.count, pendingBytes: fileSystem.pendingBytes(items.map(\.fileID)),
            failing: items.filter { $0.lastError != nil }.map {
                FailingEntry(
                    fileID: $0.fileID.hex, path: fileSystem.displayPath(of: $0.fileID), reason: $0.lastError!,
                    attempts: $0.attempts)
            },
            lastContainerError: failure, bytesUploaded: totals.plainBytesUploaded,
            encodedBytesUploaded: totals.encodedBytesUploaded, bytesDownloaded: totals.bytesDownloaded,
            online: offlineSince == nil, feedCaughtUp: caughtUp, files: usage.files, cachedBytes: usage.localBytes,
            cacheBudget: options.cacheBudget,
            transfers: fileSystem.transfers.active.map { id, transfer in
                TransferStatus(
                    path: fileSystem.displayPath(of: id) ?? id.hex, direction: transfer.direction, done: transfer.done,
                    total: transfer.total)
            }.sorted { $0.path < $1.path }, conflicts: fileSystem.conflictCount(),
            refusedRemoteEntries: refusals.all, rulesErrors: fileSystem.rulesWatch.errors)
        status.offlineSince = offlineSince.map { Self.timestamp($0) }
        status.changesWaiting = status.pendingEntries
        status.upToDate = status.online && caughtUp && status.pendingEntries == 0
        status.uploadBytesLeft = max(
            0, status.pendingBytes - status.transfers.filter { $0.direction == .upload }.reduce(0) { $0 + $1.done })
        return status
    }

    /// RFC 3339 in UTC, to the second (`2026-11-24T15:02:11Z`).
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// `sync`: everything waiting is uploaded now, without the quiet delay.
    public func expedite() { fileSystem.outbox.expediteAll() }
}

/// The engine's state as the CLI reports it.
public struct SyncStatus: Codable, Sendable {
    public var pendingEntries: Int
    public var pendingBytes: Int64
    public var failing: [FailingEntry]
    public var lastContainerError: String?
    public var bytesUploaded: Int64
    public var encodedBytesUploaded: Int64
    public var bytesDownloaded: Int64
    /// The container answers: no call failed as unreachable since the last answer.
    public var online: Bool
    /// When the current outage began (RFC 3339, UTC); nil while online.
    public var offlineSince: String?
    // The fields below are optional only so that a newer client can read an older daemon's
    // answer; a daemon always sets them.
    /// Online, the feed applied and the queue empty: safe to close the laptop.
    public var upToDate: Bool?
    /// Local changes not yet committed by the container (= `pendingEntries`), failing or not.
    public var changesWaiting: Int?
    /// Bytes of queued content still to upload: `pendingBytes` less what uploads in progress
    /// have already sent.
    public var uploadBytesLeft: Int64?
    /// The follower applied everything the container had at its last look.
    public var feedCaughtUp: Bool
    public var files: FileCounts
    /// Lengths of the files whose content is here.
    public var cachedBytes: Int64
    public var cacheBudget: Int64?
    public var transfers: [TransferStatus]
    /// Unresolved conflicts (conflict copies and files with conflict markers).
    public var conflicts: Int
    /// Remote entries this mount refused to apply (see `RemoteEntryValidation`).
    public var refusedRemoteEntries: [RefusedRemoteEntry]
    /// Rules files with an error now (`RulesWatch`).
    public var rulesErrors: [RulesFileError]
}

public struct FailingEntry: Codable, Sendable {
    public var fileID: String
    public var path: String?
    public var reason: String
    public var attempts: Int
}
