import Foundation
import Synchronization

/// The sync rounds a watcher of `events` sees (doc/SEMANTICS.md, "Sync rounds"):
///
/// - `scan-begin` / `scan-end` around the follower's reading of the container's feed to its end
///   after the engine started (a first attach, or a catch-up with what changed while the mount
///   was away) and after a failure of the feed (being offline); `scan-begin` comes with the first
///   batch read, `scan-end` when the feed is read to its end, with what was read.
/// - `synced` each time the mount becomes up to date — `status`'s `upToDate`: online, the
///   server's storage there, the feed read to its end, nothing queued, the mass-delete guard not
///   holding — with what was sent and received since the last `synced`.
///
/// No polling: the uploader and the follower report what they learn (an item taken, a commit, a
/// remote change, the end of the feed, a failure) and call `check` where they go idle. `synced`
/// is published once per transition: after it, only a new round (an upload taken, a remote
/// change, a failure, a check that found the mount not up to date) makes another possible. At
/// most one a `minimumInterval`: a transition sooner is looked at again once the interval is
/// over (one deferred `check`), so a burst of changes gives a few, with the counts of all.
final class SyncRounds: Sendable {
    /// Why a scan is made (`scan-begin`'s `message`).
    enum ScanReason: String, Sendable {
        case attach
        case catchUp = "catch-up"
    }

    /// What one feed entry was to this mount before it was applied.
    enum Novelty: Sendable {
        case added, changed, removed
    }

    private struct Scan {
        var reason: ScanReason
        var begun = false
        var counts = EventCounts(entries: 0, added: 0, changed: 0, removed: 0)
    }

    private struct State {
        /// `synced` was published and no new round began since.
        var upToDateSeen = false
        var sent = 0
        var received = 0
        /// The engine's transfer totals when the last `synced` was published.
        var totalsAtLastSynced = ContentTransfer.Totals()
        var lastSyncedAt: ContinuousClock.Instant?
        var deferredCheck = false
        /// The scan the follower makes now or with its next read (nil: none).
        var scan: Scan?
        var stopped = false
    }

    static let minimumInterval: Duration = .seconds(1)

    private let state = Mutex(State())
    private let events: ChangeEvents
    private let progress: EngineProgress
    private let isUpToDate: @Sendable () -> Bool
    private let minimumInterval: Duration

    /// `isUpToDate`: the condition `status` shows as `upToDate`, read when a round may end.
    init(
        events: ChangeEvents, progress: EngineProgress, minimumInterval: Duration = SyncRounds.minimumInterval,
        isUpToDate: @escaping @Sendable () -> Bool
    ) {
        self.events = events
        self.progress = progress
        self.minimumInterval = minimumInterval
        self.isUpToDate = isUpToDate
    }

    // MARK: The follower's scans

    /// The follower starts (the first attach when `attaching`, else a catch-up) or lost the feed
    /// (a failure): its next successful read begins a scan, unless one is under way.
    func scanNeeded(_ reason: ScanReason) {
        state.withLock { state in
            state.upToDateSeen = false
            if state.scan == nil { state.scan = Scan(reason: reason) }
        }
    }

    /// The follower read a batch of `count` entries (before applying them): a scan waiting for
    /// its first read begins now.
    func feedRead(_ count: Int) {
        let begin = state.withLock { state -> ScanReason? in
            guard var scan = state.scan else { return nil }
            scan.counts.entries! += count
            defer { state.scan = scan }
            if scan.begun { return nil }
            scan.begun = true
            return scan.reason
        }
        if let begin {
            events.publish(
                ChangeEvent(kind: .scanBegin, path: "", origin: nil, fileID: nil, type: nil, message: begin.rawValue))
        }
    }

    /// The follower applied a feed entry that was `novelty` to this mount (another device's
    /// change): a new round.
    func received(_ novelty: Novelty) {
        state.withLock { state in
            state.upToDateSeen = false
            state.received += 1
            guard state.scan != nil else { return }
            switch novelty {
            case .added: state.scan!.counts.added! += 1
            case .changed: state.scan!.counts.changed! += 1
            case .removed: state.scan!.counts.removed! += 1
            }
        }
    }

    /// The follower read the feed to its end: a scan under way ends; the mount may be up to date.
    func feedCaughtUp() {
        let ended = state.withLock { state -> EventCounts? in
            guard let scan = state.scan, scan.begun else { return nil }
            state.scan = nil
            return scan.counts
        }
        if let ended {
            events.publish(ChangeEvent(kind: .scanEnd, path: "", origin: nil, fileID: nil, type: nil, counts: ended))
        }
        check()
    }

    // MARK: The uploader's rounds

    /// The uploader took a queued change: a new round unless the mount is up to date even so: a change held as ignored that is
    /// looked at again (a write to an ignored file) is no round and gives no `synced`.
    func uploadTaken() {
        state.withLock { state in
            if !isUpToDate() { state.upToDateSeen = false }
        }
    }

    /// The container committed one of this mount's changes: a new round (also for a change
    /// taken as ignored and found synced after all).
    func sent() {
        state.withLock { state in
            state.sent += 1
            state.upToDateSeen = false
        }
    }

    // MARK: Up to date

    /// The condition, now (`status`'s `upToDate`).
    var isUpToDateNow: Bool { isUpToDate() }

    /// Whether the `synced` of the last transition to up to date was published (none is waiting
    /// for `minimumInterval` to pass): what a watcher subscribing now will not see again.
    var publishedUpToDate: Bool { state.withLock { $0.upToDateSeen && !$0.deferredCheck } }

    /// Looks at the condition (where a thread goes idle): publishes `synced` if the mount became
    /// up to date since the last one, or looks again once `minimumInterval` has passed since it.
    func check() {
        let clock = ContinuousClock()
        var deferBy: Duration?
        let synced = state.withLock { state -> EventCounts? in
            guard !state.stopped else { return nil }
            guard isUpToDate() else {
                state.upToDateSeen = false
                return nil
            }
            guard !state.upToDateSeen else { return nil }
            // The feed is caught up but its scan not yet ended: `feedCaughtUp` ends it and
            // looks again, so `synced` never comes before the `scan-end` it follows.
            guard !(state.scan?.begun ?? false) else { return nil }
            if let last = state.lastSyncedAt, clock.now - last < minimumInterval {
                if !state.deferredCheck {
                    state.deferredCheck = true
                    deferBy = minimumInterval - (clock.now - last)
                }
                return nil
            }
            let totals = progress.snapshot.totals
            let counts = EventCounts(
                sent: state.sent, received: state.received,
                bytesUploaded: totals.plainBytesUploaded - state.totalsAtLastSynced.plainBytesUploaded,
                bytesDownloaded: totals.bytesDownloaded - state.totalsAtLastSynced.bytesDownloaded)
            state.upToDateSeen = true
            state.sent = 0
            state.received = 0
            state.totalsAtLastSynced = totals
            state.lastSyncedAt = clock.now
            return counts
        }
        if let synced {
            events.publish(ChangeEvent(kind: .synced, path: "", origin: nil, fileID: nil, type: nil, counts: synced))
        }
        if let deferBy {
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(deferBy.inNanoseconds))) {
                [self] in
                state.withLock { $0.deferredCheck = false }
                check()
            }
        }
    }

    /// The engine stops: nothing more is published (a deferred check finds it stopped).
    func stop() { state.withLock { $0.stopped = true } }
}
