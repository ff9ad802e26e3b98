import Foundation

/// The first attach of a tree (`TreeAttach`): the daemon starts the engine before the FUSE
/// session and waits here until the follower reached the end of the change feed. The follower
/// reports its progress here; the state database records whether the tree is attached.
final class AttachTracker: Sendable {
    /// Whether this mount's tree is attached, and the first attach's progress.
    let attach: TreeAttach
    private let store: MetadataStore
    private let changeEvents: ChangeEvents
    private let reported: EngineProgress
    /// Counts what the follower notes here (entries, the end): what the wait sleeps on.
    let changes = AwaitedVersion()

    init(fileSystem: SyncFileSystem, progress: EngineProgress) {
        attach = TreeAttach(facts: fileSystem.storedFacts)
        store = fileSystem.store
        changeEvents = fileSystem.changeEvents
        reported = progress
    }

    /// How a wait for the attach ended.
    enum AttachOutcome: Equatable, Sendable {
        /// The follower reached the end of the feed: the tree is the container's.
        case attached(entries: Int)
        /// The follower failed and made no progress for the whole limit; `reason` is its last
        /// failure (the container unreachable, or refusing).
        case stalled(entries: Int, reason: String)
    }

    /// Records that this mount's tree is not attached yet (`tree_attached` = 0), before the
    /// follower starts, so that a crash in the middle leaves a directory the next mount attaches
    /// again. Does nothing on a mount that does not need the attach.
    /// The state database gets a larger page cache and WAL until the attach is complete
    /// (`MetadataStore.useAttachSettings`), and the entries it brings are not published one by one
    /// (`scan-end` counts them; doc/SEMANTICS.md, "Sync rounds").
    func prepare() {
        guard attach.isNeeded else { return }
        store.factSet(.treeAttached, false)
        store.useAttachSettings(true)
        changeEvents.setAttaching(true)
    }

    /// Changes the store may hold for its flusher before the follower waits for it. A commit
    /// takes the whole queue, so this is about the size of the flusher's batches during a first
    /// attach: larger batches write each page of the random-keyed B-trees fewer times (1,000,000
    /// entries: `ready` after 55–57 s with 8,192, 42–46 s with 65,536, 37–39 s with 262,144 but
    /// 25–55 MiB more RSS after the attach; doc/PERFORMANCE.md).
    static let followerBacklogLimit = 65_536

    /// The follower read a batch of `count` entries and handled them. Applied without the kernel
    /// or the echo (a first attach), the follower outruns the store's flusher, and the records
    /// queued behind it raised the daemon's RSS by ~40 MB at 100,000 entries (doc/PERFORMANCE.md):
    /// past `followerBacklogLimit` queued changes the follower waits for the flusher to take them
    /// (`MetadataStore.waitForQueue`), so the backlog stays bounded and the two work side by side.
    func followerHandled(_ count: Int) {
        attach.noteEntries(count)
        changes.increment()
        store.waitForQueue(below: Self.followerBacklogLimit)
    }

    /// The follower reached the end of the feed (and retried what it deferred): a needed attach is
    /// complete, recorded behind the cursor that reached it.
    func followerReachedEnd() {
        defer { changes.increment() }
        guard attach.noteEndReached(), attach.isNeeded else { return }
        store.record([.fact(.treeAttached, true)])
        store.useAttachSettings(false)
        changeEvents.setAttaching(false)
    }

    /// The engine stops: an attach it left unfinished no longer keeps remote changes from being
    /// published one by one (a later engine on the same file system prepares its own).
    func stopped() {
        changeEvents.setAttaching(false)
    }

    /// Waits until the follower reached the end of the feed once, calling `report` with the
    /// entries handled so far about every `interval`. Gives up when the follower has been
    /// failing without handling a single entry for `stallLimit` (a container unreachable since
    /// the attach began, or one that refuses the feed); a slow but moving attach has no limit.
    /// Sleeps until the follower notes entries or the end (`changes`), the next report or the end
    /// of the stall limit, whichever comes first; the follower's failure (`EngineProgress`) is
    /// looked at on each wake, so a stall is counted from at most `interval` after it began.
    func waitUntilAttached(
        stallLimit: Duration, interval: Duration = .seconds(1), report: (Int) -> Void
    ) -> AttachOutcome {
        let clock = ContinuousClock()
        var lastEntries = -1
        var stalledSince: ContinuousClock.Instant?
        var nextReport = clock.now + interval
        while true {
            let seen = changes.value
            let progress = attach.progress
            if progress.endReached {
                // `ready` means the attached tree (and `tree_attached` = 1) is on disk: a crash
                // right after it does not make the next mount attach again (and wait for a
                // container that may be away by then). A failure here only delays that write.
                try? store.commit(durable: true)
                return .attached(entries: progress.entries)
            }
            let now = clock.now
            let failure = reported.lastFailure
            if progress.entries != lastEntries || failure == nil {
                lastEntries = progress.entries
                stalledSince = nil
            } else if let since = stalledSince {
                if now - since >= stallLimit, let failure {
                    return .stalled(entries: progress.entries, reason: failure)
                }
            } else {
                stalledSince = now
            }
            if now >= nextReport {
                nextReport = now + interval
                report(progress.entries)
            }
            let wakeAt = stalledSince.map { min(nextReport, $0 + stallLimit) } ?? nextReport
            _ = changes.wait(forAtLeast: seen + 1, within: wakeAt - clock.now)
        }
    }
}
