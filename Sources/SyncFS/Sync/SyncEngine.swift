import Foundation
import Logging
import SyncBackend
import Synchronization

/// The sync engine of one mount: an uploader that drains the outbox into the container and a
/// follower that applies the container's change feed to the folder.
///
/// Both run on threads of their own and call Core synchronously; container calls go through
/// `BlockingContainer`. Nothing here holds Core's lock across a container call.
final class SyncEngine: Sendable {
    struct Options: Sendable {
        /// zlib level for uploads (1 is fast and still shrinks text 3–4×).
        var compressionLevel: Int32 = 1
        /// How long the follower waits on the feed before checking again anyway.
        var feedWait: Duration = .seconds(30)
        /// Bytes of local content to keep at most (nil: no limit); see `enforceBudget`.
        var cacheBudget: Int64?
        /// The merge commands this machine allows (`merge=command:NAME`); default: none.
        var mergeCommands = LocalMergeCommands.none
        /// When the mass-delete guard trips (nil: `--no-guard`; `DeleteGuard`).
        var deleteGuard: DeleteWindow.Thresholds? = .standard
        init() {}
    }

    let fileSystem: SyncFileSystem
    /// The container's changes applied to the tree (the follower's side).
    let remote: RemoteChanges
    /// Queued entries taken for upload and the container's answers recorded (the uploader's side).
    let uploads: UploadRecords
    /// Merges adopted, conflict copies kept, unresolved conflicts listed.
    let conflicts: Conflicts
    /// The container as the engine's threads call it (synchronous, one error mapping).
    let container: BlockingContainer
    /// The container's history (`versions`, `trash`, `restore`), checked where it enters.
    let history: HistoryReader
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
    /// Entries `takeRemote` left parked whose real name could not be read yet
    /// (`unparkAfterTakingRemote`): the follower takes them into its deferred entries.
    let unparksToRetry = Mutex<Set<FileID>>([])
    /// Runs `merge=command:` merges off the uploader (one slow command delays only its file).
    let mergeWorker: MergeCommandWorker
    /// Whether this mount's tree is attached, and the first attach's progress (`TreeAttach`).
    let attach: TreeAttach
    /// Holds the uploads when too many deletions or replacements come at once (`DeleteGuard`).
    let deleteGuard: DeleteGuard
    /// Checks of the tree against the container, wanted or awaited (`SyncEngine+TreeCheck`).
    let treeChecks = TreeCheckRequests()
    /// The container as it answers, unchecked, for the tree check's reading of the whole feed
    /// (an entry this mount refuses still exists in the container and is never taken as absent).
    let uncheckedContainer: BlockingContainer

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

    init(fileSystem: SyncFileSystem, container: any Container, options: Options = Options(), logger: Logger) {
        self.fileSystem = fileSystem
        let remote = RemoteChanges(fileSystem: fileSystem)
        self.remote = remote
        uploads = UploadRecords(fileSystem: fileSystem)
        conflicts = Conflicts(fileSystem: fileSystem, remote: remote)
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
        reachability.onStorageChange { away, reason in
            if away {
                logger.warning("the server cannot reach its storage (changes stay queued): \(reason ?? "")")
            } else {
                logger.notice("the server reaches its storage again")
            }
        }
        let watched = ReachabilityWatchingContainer(base: validated, reachability: reachability)
        history = HistoryReader(base: container as? any ContainerHistory)
        uncheckedContainer = BlockingContainer(base: container)
        let container = BlockingContainer(
            base: AnsweringContainer(watched) { [outbox = fileSystem.outbox] in outbox.containerAnswered() })
        self.container = container
        self.refusals = refusals
        mergeWorker = MergeCommandWorker(outbox: fileSystem.outbox)
        attach = TreeAttach(facts: fileSystem.storedFacts)
        deleteGuard = Self.makeDeleteGuard(fileSystem: fileSystem, thresholds: options.deleteGuard, logger: logger)
        self.options = options
        self.logger = logger
        transfer = ContentTransfer(container: container, compressionLevel: options.compressionLevel)
    }

    /// Starts the uploader, the follower, the background downloader and the budget keeper, and
    /// becomes the file system's source of placeholder content.
    func start() {
        fileSystem.residency.setChunkSource(self)
        // After every switch of server the tree is checked against the new one.
        (uncheckedContainer.base as? any ServerSwitching)?.observeSwitches { [treeChecks, stopWaiting] in
            treeChecks.request()
            stopWaiting.interrupt()
        }
        let downloads = self.downloads
        fileSystem.residency.setPinObserver { [activity = fileSystem.residency.contentActivity] in
            downloads.pokeForPins()
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
    func stop() {
        state.withLock { $0.running = false }
        fileSystem.residency.setChunkSource(nil)
        fileSystem.residency.setPinObserver(nil)
        downloads.stop()
        mergeWorker.stop()
        stopWaiting.cancel()
        stopSleeping.stop()
        fileSystem.residency.contentActivity.note()
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

    /// The engine's own part of `status` (the daemon builds `SyncStatus` from it and Core's values).
    struct Progress {
        /// The last container failure seen by either thread, cleared by a success.
        var lastFailure: String?
        var totals: ContentTransfer.Totals
        /// The follower applied everything the feed had at its last look.
        var feedCaughtUp: Bool
        /// When the current outage began; nil while online.
        var offlineSince: Date?
        /// Since when the server answers that its storage is unavailable; nil otherwise.
        var storageUnavailableSince: Date?
    }

    var progress: Progress {
        let (failure, totals, caughtUp) = state.withLock { ($0.lastFailure, $0.totals, $0.feedCaughtUp) }
        return Progress(
            lastFailure: failure, totals: totals, feedCaughtUp: caughtUp, offlineSince: reachability.offlineSince,
            storageUnavailableSince: reachability.storageUnavailableSince)
    }

    /// `sync`: everything waiting is uploaded now, without the quiet delay.
    func expedite() { fileSystem.outbox.expediteAll() }
}
