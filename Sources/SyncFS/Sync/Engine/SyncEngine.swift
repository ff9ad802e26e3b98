import Foundation
import Logging
import SyncBackend
import Synchronization

/// The sync engine of one mount. It only assembles its parts, starts their threads and joins
/// them; each part owns its state and names in its constructor exactly what it uses:
///
/// - `Uploader` (thread `syncfs-uploader`): drains the outbox into the container; a refused
///   commit is decided by `ConflictDecision` and carried out one action at a time, with merges
///   by `ContentMerger` and the mass-delete guard's say by `GuardedUploads`.
/// - `Follower` (`syncfs-follower`): reads the change feed; each entry goes through the
///   remote-apply pipeline (`RemoteApplier`: plan, parent, fetch, apply, echo, invalidate), and
///   the follower records its cursor; `TreeChecker` compares the tree with the container.
/// - `Downloader` (`syncfs-downloader`): placeholder content, chunk by chunk or whole files.
/// - `RulesChecker` (`syncfs-rules`), `CacheBudgetKeeper` (`syncfs-cache`, with a budget).
/// - `HistoryService`: `versions`, `trash`, `restore` for the control socket.
///
/// The threads call Core synchronously; container calls go through `BlockingContainer`.
/// Nothing here holds Core's lock across a container call.
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
        /// `--upload-limit`, `--download-limit`, `--limit-schedule` (`BandwidthLimiter`).
        var bandwidth = BandwidthLimiter.Configuration()
        init() {}
    }

    let fileSystem: SyncFileSystem
    let options: Options
    let logger: Logger

    // The parts, each on its own thread or called by the control socket.
    let uploader: Uploader
    let follower: Follower
    let downloader: Downloader
    let budgetKeeper: CacheBudgetKeeper?
    let rules: RulesChecker
    let history: HistoryService
    let guarded: GuardedUploads
    let treeChecker: TreeChecker
    let attaching: AttachTracker
    /// The role the container grants this mount, kept current (`AccessKeeper`).
    let accessKeeper: AccessKeeper
    /// The container's own report for `status` (an encrypted container's), if it has one.
    let reporting: (any ReportingContainer)?

    // What `status` shows of them.
    let uploads: UploadRecords
    /// Merges adopted, conflict copies kept, unresolved conflicts listed.
    let conflicts: Conflicts
    /// Remote entries refused by `RemoteEntryValidation` (shown by `status`).
    let refusals: RemoteEntryRefusals
    /// Whether the container answers (`status`: online, or offline since when).
    let reachability: Reachability
    /// `scan-begin`, `scan-end` and `synced` (`SyncRounds`).
    let rounds: SyncRounds
    /// The mount's bandwidth limits, shared by every chunk transfer (`limit` changes them).
    let limiter: BandwidthLimiter
    /// `pause` and `resume`: the uploader, the follower and (all transfers) the downloader wait.
    let pause: SyncPause
    private let reported: EngineProgress
    let run: EngineRun
    /// The container as it answers, unchecked (a server switch is observed on it).
    private let uncheckedContainer: BlockingContainer
    private let threads = EngineThreads()

    /// `sleeper`: what the engine's pauses between attempts sleep on (`EngineSleeper`); real time
    /// unless a test drives them.
    init(
        fileSystem: SyncFileSystem, container: any Container, options: Options = Options(), logger: Logger,
        sleeper: any EngineSleeper = StopSignal()
    ) {
        self.fileSystem = fileSystem
        self.options = options
        self.logger = logger
        let remote = RemoteChanges(fileSystem: fileSystem)
        let uploads = UploadRecords(fileSystem: fileSystem)
        self.uploads = uploads
        conflicts = Conflicts(fileSystem: fileSystem, remote: remote)
        let refusals = RemoteEntryRefusals()
        self.refusals = refusals
        let reachability = Reachability()
        self.reachability = reachability
        let historyReader = HistoryReader(base: container as? any ContainerHistory)
        reporting = container as? any ReportingContainer
        reporting?.observeAlarm { [logger] alarm in
            logger.critical(
                "ALARM: \(alarm). Nothing more is applied or uploaded; everything here stays local. Compare `syncfs-mount status` on the other devices and see doc/CRYPTO.md"
            )
            fileSystem.changeEvents.publish(
                ChangeEvent(
                    kind: .alarm, path: "", origin: nil, fileID: nil, type: nil,
                    message: RulesWatch.printableLine(alarm)))
        }
        uncheckedContainer = BlockingContainer(base: container)
        var bandwidth = options.bandwidth
        bandwidth.overrides = fileSystem.storedFacts[.bandwidthOverrides] ?? BandwidthOverrides()
        if !bandwidth.overrides.isEmpty {
            logger.notice(
                "bandwidth limits set by `limit` (\(bandwidth.overrides.text)) win over this mount's options; `limit --reset` forgets them"
            )
        }
        let limiter = BandwidthLimiter(bandwidth)
        self.limiter = limiter
        var blocking = Self.checked(
            container, refusals: refusals, reachability: reachability, outbox: fileSystem.outbox, logger: logger)
        blocking.limiter = limiter
        var transfer = ContentTransfer(container: blocking, compressionLevel: options.compressionLevel)
        if let chunking = container as? any ChunkingContainer { transfer.chunking = { chunking.chunker } }
        let reported = EngineProgress()
        self.reported = reported
        let run = EngineRun(sleeper: sleeper)
        self.run = run
        let pause = Self.makePause(fileSystem: fileSystem, logger: logger)
        self.pause = pause
        let log = EngineLog(logger: logger, fileSystem: fileSystem)

        let applier = RemoteApplier(
            remote: remote, uploads: uploads, container: blocking, transfer: transfer, refusals: refusals,
            progress: reported, contentActivity: fileSystem.residency.contentActivity, logger: logger)
        let parked = ParkedEntries(
            uploads: uploads, history: historyReader, deviceIdentity: fileSystem.deviceIdentity, log: log)
        let remoteWins = RemoteWins(applier: applier, outbox: fileSystem.outbox, parked: parked)
        history = HistoryService(
            fileSystem: fileSystem, container: blocking, history: historyReader,
            followerPaused: { pause.holds(.sync) })
        let deleteGuard = GuardedUploads.makeDeleteGuard(
            fileSystem: fileSystem, thresholds: options.deleteGuard, logger: logger)
        let rounds = Self.rounds(
            fileSystem: fileSystem, reachability: reachability, progress: reported, deleteGuard: deleteGuard,
            pause: pause)
        self.rounds = rounds
        let accessKeeper = AccessKeeper(
            container: container as? any ContainerAccess, fileSystem: fileSystem, logger: logger)
        self.accessKeeper = accessKeeper
        Self.watch(reachability, fileSystem: fileSystem, rounds: rounds, access: accessKeeper, logger: logger)
        guarded = GuardedUploads(
            deleteGuard: deleteGuard, fileSystem: fileSystem, uploads: uploads, container: blocking,
            transfer: transfer, remoteWins: remoteWins, history: history, progress: reported, logger: logger)
        rules = RulesChecker(fileSystem: fileSystem, run: run, reachability: reachability, logger: logger)
        let merger = ContentMerger(
            fileSystem: fileSystem, conflicts: conflicts, remote: remote, container: blocking, transfer: transfer,
            applier: applier, remoteWins: remoteWins, rules: rules, mergeCommands: options.mergeCommands,
            progress: reported, log: log)
        uploader = Uploader(
            fileSystem: fileSystem, uploads: uploads, container: blocking, transfer: transfer, guarded: guarded,
            merger: merger, conflicts: conflicts, remoteWins: remoteWins, progress: reported, rounds: rounds, run: run,
            pause: pause, log: log)
        downloader = Downloader(
            fileSystem: fileSystem, transfer: transfer, progress: reported, run: run, pause: pause)
        budgetKeeper = options.cacheBudget.map { CacheBudgetKeeper(fileSystem: fileSystem, run: run, budget: $0) }
        attaching = AttachTracker(fileSystem: fileSystem, progress: reported)
        treeChecker = TreeChecker(
            container: blocking, uncheckedContainer: uncheckedContainer, remote: remote, applier: applier,
            refusals: refusals, events: fileSystem.changeEvents, run: run, logger: logger)
        follower = Follower(
            fileSystem: fileSystem, container: blocking, remote: remote, applier: applier, parked: parked,
            deleteGuard: deleteGuard, attaching: attaching, treeChecker: treeChecker, downloads: downloader.queue,
            progress: reported, rounds: rounds, run: run, pause: pause, log: log, feedWait: options.feedWait,
            stopWaiting: CancelHandle())
    }

    /// Starts the uploader, the follower, the background downloader, the rules checker and the
    /// budget keeper, and makes the downloader the file system's source of placeholder content.
    func start() {
        // Paused with all transfers (`pause --all`): no source, a placeholder's read fails as offline.
        fileSystem.residency.hydrations.setChunkSource(pause.holds(.all) ? nil : downloader as any ChunkSource)
        observePause()
        // After every switch of server the tree is checked against the new one.
        (uncheckedContainer.base as? any ServerSwitching)?.observeSwitches { [treeChecker, follower] in
            treeChecker.requests.request()
            follower.stopWaiting.interrupt()
        }
        fileSystem.residency.setPinObserver {
            [queue = downloader.queue, activity = fileSystem.residency.contentActivity] in
            queue.pokeForPins()
            activity.note()  // an unpinned file may now be evicted
        }
        let outbox = fileSystem.outbox
        let activity = fileSystem.residency.contentActivity
        let rulesWatch = fileSystem.rulesWatch
        threads.start("syncfs-downloader", wake: downloader.stop, body: downloader.runDownloads)
        if let budgetKeeper {
            threads.start("syncfs-cache", wake: activity.note, body: budgetKeeper.runChecks)
        }
        threads.start("syncfs-rules", wake: rulesWatch.poke, body: rules.runChecks)
        threads.start("syncfs-uploader", wake: outbox.poke, body: uploader.runUploads)
        threads.start("syncfs-follower", wake: follower.stopWaiting.cancel, body: follower.runFollowing)
        if accessKeeper.container != nil {
            threads.start("syncfs-access", wake: accessKeeper.stop, body: accessKeeper.runChecks)
        }
    }

    /// Stops every thread (an upload in progress finishes its current call): each is woken from
    /// whatever it waits on, then all are joined, for at most 10 s together.
    func stop() {
        run.stop()
        pause.stop()
        rounds.stop()
        limiter.stop()
        fileSystem.residency.hydrations.setChunkSource(nil)
        fileSystem.residency.setPinObserver(nil)
        uploader.merger.mergeWorker.stop()
        attaching.stopped()
        let late = threads.stop(within: .seconds(10))
        if !late.isEmpty {
            logger.warning("the sync engine did not stop within 10 s: \(late.joined(separator: ", ")) still running")
        }
    }

    var isRunning: Bool { run.isRunning }

    /// `verify`: asks the follower for a check of the tree and waits for its report (nil: none
    /// within `timeout`).
    func verifyTree(timeout: Duration) -> TreeCheckReport? {
        treeChecker.verify(timeout: timeout) { follower.stopWaiting.interrupt() }
    }

    /// The sync rounds, up to date when `status` would say `upToDate` (`SyncEngine.status`).
    private static func rounds(
        fileSystem: SyncFileSystem, reachability: Reachability, progress: EngineProgress, deleteGuard: DeleteGuard,
        pause: SyncPause
    ) -> SyncRounds {
        SyncRounds(events: fileSystem.changeEvents, progress: progress) { [outbox = fileSystem.outbox] in
            reachability.isOnline && reachability.storageUnavailableSince == nil && progress.feedCaughtUp
                && outbox.activeCount == 0 && !deleteGuard.isHeld && pause.current == nil
        }
    }

    /// The container as the engine's threads call it: every entry it sends checked before
    /// anything is done with it (refusals shown by `status`, logged once per entry), every
    /// answer or failure seen by `reachability`, and every answer lets changes that failed only
    /// because it was away go now.
    private static func checked(
        _ container: any Container, refusals: RemoteEntryRefusals, reachability: Reachability, outbox: Outbox,
        logger: Logger
    ) -> BlockingContainer {
        let validated = ValidatingContainer(
            base: container,
            refused: { entry, reason in refusals.refuse(entry, because: reason, logger: logger) },
            accepted: { entry in refusals.clear(ifNewer: entry) })
        let watched = ReachabilityWatchingContainer(base: validated, reachability: reachability)
        return BlockingContainer(base: AnsweringContainer(watched) { outbox.containerAnswered() })
    }

    /// Publishes each change between answering and not answering, and logs the server's storage
    /// going away and coming back.
    private static func watch(
        _ reachability: Reachability, fileSystem: SyncFileSystem, rounds: SyncRounds, access: AccessKeeper,
        logger: Logger
    ) {
        reachability.onChange { [fileSystem] online, reason in
            // What changed while the mount was offline is caught up with next: a scan. The role
            // may have changed too: it is read again.
            if !online { rounds.scanNeeded(.catchUp) } else { access.reconnected() }
            Self.reachabilityChanged(online: online, reason: reason, fileSystem: fileSystem)
        }
        reachability.onStorageChange { away, reason in
            if away {
                logger.warning("the server cannot reach its storage (changes stay queued): \(reason ?? "")")
            } else {
                logger.notice("the server reaches its storage again")
            }
        }
    }

    /// The container answers (`Reachability`: the one online/offline state of the mount).
    var isOnline: Bool { reachability.isOnline }

    /// Each change between answering and not answering: `online`/`offline` published once (not
    /// once per retry), in the order seen; a rules file left unread while offline is read now.
    private static func reachabilityChanged(online: Bool, reason: String?, fileSystem: SyncFileSystem) {
        if online { fileSystem.rulesWatch.touched() }
        fileSystem.changeEvents.publish(
            ChangeEvent(
                kind: online ? .online : .offline, path: "", origin: nil, fileID: nil, type: nil,
                message: reason.map(RulesWatch.printableLine)))
    }

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
        let (totals, failure, caughtUp) = reported.snapshot
        return Progress(
            lastFailure: failure, totals: totals, feedCaughtUp: caughtUp, offlineSince: reachability.offlineSince,
            storageUnavailableSince: reachability.storageUnavailableSince)
    }

    /// `sync`: everything waiting is uploaded now, without the quiet delay.
    func expedite() { fileSystem.outbox.expediteAll() }
}
