/// The sync engine's short waits, each named with why it is that long.
///
/// The outbox counts time in nanoseconds of `Clock.nowNanoseconds`; `Outbox.postpone` and
/// `Outbox.waitForWork` take these as `Duration`s and convert once (`inNanoseconds`).
enum EngineDelay {
    /// The longest the idle uploader sleeps: the outbox wakes it for every change and knows when a
    /// waiting item is due, so this is only a backstop — an idle mount wakes once a minute.
    static let uploaderBackstop: Duration = .seconds(60)

    /// The longest rest of the uploader after an upload during a burst of local changes (it
    /// rests as long as the upload took): the folder's programs keep most of the CPU, and a
    /// backlog still moves.
    static let burstRestMaximum: Duration = .milliseconds(250)

    /// A file that cannot be uploaded or adopted right now (open for writing, its content being
    /// installed, the entry changed under a merge) is looked at again after 0.2 s: short enough
    /// that closing an editor sends the file at once to a human eye, long enough not to spin.
    static let localEntryBusy: Duration = .milliseconds(200)

    /// Content written while it was being read for upload goes again after 0.1 s, the standard
    /// quiet delay (`UploadQueue.Policy.standardQuietDelay`): a writer that is still going moves
    /// it further.
    static let changedWhileUploading: Duration = .milliseconds(100)

    /// Another change this one depends on is being uploaded further up the same call chain:
    /// 50 ms, about one commit's round trip, then this one comes back after it.
    static let otherUploadUnderway: Duration = .milliseconds(50)

    /// The container waits for other queued local changes (a directory delete or move, see
    /// `ConflictDecision` `.waitForOthers`): 0.5 s lets those go first without a busy loop.
    static let waitingForOthers: Duration = .milliseconds(500)

    /// The container's version could not be applied here yet (a parent missing, a file open):
    /// 0.5 s, like `waitingForOthers`, to let the follower and the kernel move first.
    static let remoteNotAppliedYet: Duration = .milliseconds(500)

    /// A file waiting for its merge command is parked for the command's timeout plus 30 s: the
    /// command's end wakes it (`Outbox.expedite`), so the margin only covers a worker that never
    /// reports (it must not wait forever, nor go before the command had all its time).
    static let mergeCommandGrace: Duration = .seconds(30)

    /// While some deferred remote changes wait for a parent, the follower looks at the feed again
    /// after 0.5 s instead of its long wait.
    static let deferredRetry: Duration = .milliseconds(500)

    /// After a failed round of the follower (an outage, a refused cursor), a pause of 1 s before
    /// the next: the container is not hammered, and the mount notices its return within a second.
    static let followerFailurePause: Duration = .seconds(1)

    /// A background download that failed (most likely the container is away) pauses the
    /// downloader 5 s: it does not churn through its queue failing every file.
    static let downloadFailurePause: Duration = .seconds(5)

    /// With nothing queued, the downloader looks for pinned placeholders every 30 s anyway (pins
    /// and tree changes wake it sooner): a pin's files arrive even if a wake-up was missed.
    static let pinnedPlaceholderScan: Duration = .seconds(30)

    /// The budget keeper looks at most once a second while content grows: eviction keeps up with
    /// a fast writer without rescanning the cache for every write.
    static let budgetCheckPause: Duration = .seconds(1)
}

extension Duration {
    /// The whole nanoseconds of this duration (the outbox's and the failure log's clock unit),
    /// saturating at `Int64.max`.
    @usableFromInline var inNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflowed) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (total, overflowedAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflowed, !overflowedAgain else { return seconds < 0 ? .min : .max }
        return total
    }
}
