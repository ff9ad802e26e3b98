import Foundation
import SyncBackend

/// The follower thread: reads the container's change feed from the stored cursor and hands each
/// entry to the remote-apply pipeline (`RemoteApplier`); keeps the entries it must retry
/// (deferred), tells the mass-delete guard what arrived, reports the first attach's progress and
/// its scans of the feed (`SyncRounds`), and makes the tree check when one is asked for
/// (`TreeChecker`).
final class Follower: Sendable {
    private let fileSystem: SyncFileSystem
    private let container: BlockingContainer
    private let remote: RemoteChanges
    private let applier: RemoteApplier
    private let parked: ParkedEntries
    private let deleteGuard: DeleteGuard
    private let attaching: AttachTracker
    private let treeChecker: TreeChecker
    private let downloads: DownloadQueue
    private let progress: EngineProgress
    private let rounds: SyncRounds
    private let run: EngineRun
    /// While the mount is paused the feed is not read.
    private let pause: SyncPause
    private let log: EngineLog
    /// How long the follower waits on the feed before checking again anyway.
    private let feedWait: Duration
    /// Ends the wait on the feed (`stop`, a server switch, `verify`).
    let stopWaiting: CancelHandle

    init(
        fileSystem: SyncFileSystem, container: BlockingContainer, remote: RemoteChanges, applier: RemoteApplier,
        parked: ParkedEntries, deleteGuard: DeleteGuard, attaching: AttachTracker, treeChecker: TreeChecker,
        downloads: DownloadQueue, progress: EngineProgress, rounds: SyncRounds, run: EngineRun, pause: SyncPause,
        log: EngineLog, feedWait: Duration, stopWaiting: CancelHandle
    ) {
        self.fileSystem = fileSystem
        self.container = container
        self.remote = remote
        self.applier = applier
        self.parked = parked
        self.deleteGuard = deleteGuard
        self.attaching = attaching
        self.treeChecker = treeChecker
        self.downloads = downloads
        self.progress = progress
        self.rounds = rounds
        self.run = run
        self.pause = pause
        self.log = log
        self.feedWait = feedWait
        self.stopWaiting = stopWaiting
    }

    /// Reads the change feed from the stored cursor and applies it, until stopped.
    ///
    /// The cursor is stored after the changes before it were applied (same ordered store), so a
    /// crash re-applies at most a batch, and applying is idempotent (bases skip what is known).
    /// Changes that cannot be applied yet are kept in the `deferred_ids` fact and retried.
    func runFollowing() {
        var cursor = fileSystem.storedFacts[.feedCursor] ?? .beginning
        var deferred = fileSystem.storedFacts[.deferredIDs] ?? []
        // What the store holds: a round that changed neither is not written again, so an idle
        // mount writes nothing to its database (each wait used to cost a WAL frame).
        var recorded = FollowerProgress(cursor: cursor.token, deferred: deferred)
        func record() {
            let progress = FollowerProgress(cursor: cursor.token, deferred: deferred)
            guard progress != recorded else { return }
            remote.recordFollowerProgress(cursor: progress.cursor, deferred: progress.deferred)
            recorded = progress
        }
        rounds.scanNeeded(attaching.attach.isNeeded ? .attach : .catchUp)
        // Pages of the server's default size: an attach or a catch-up is as many round trips as
        // pages (a 1,000,000-entry attach made 3,900 of 256); each next page is read during the
        // apply of the one before.
        let pages = FeedReadAhead(container: container, limit: WireProtocol.defaultChangesLimit)
        defer { pages.drop() }
        while run.isRunning {
            if pause.holds(.sync) {
                // The first read after the pause is a fresh one.
                pages.drop()
                // Not following: not caught up, and what changed meanwhile is a catch-up scan.
                progress.markCaughtUp(false)
                rounds.scanNeeded(.catchUp)
                pause.waitWhilePaused(.sync)
                continue
            }
            do throws(SyncFailure) {
                let batch = try pages.page(after: cursor)
                if batch.moreComing { pages.start(after: batch.cursor) }
                rounds.feedRead(batch.entries.count)
                remote.echo.beginPage(of: batch.entries.count)
                for entry in batch.entries where run.isRunning {
                    remote.noteFeedReached(entry.version)
                    deleteGuard.arrived(entry.version)
                    if let novelty = remote.novelty(of: entry) { rounds.received(novelty) }
                    if try applier.apply(entry, force: false), parked.unparkIfAbandoned(entry) {
                        deferred.remove(entry.id)
                    } else {
                        deferred.insert(entry.id)
                    }
                    remote.noteFeedHandled(entry.version)
                }
                // Stopped in the middle of the batch: its cursor must not be stored, or the rest of
                // the batch would never be applied (the next mount reads the batch again).
                guard run.isRunning else { break }
                deferred.formUnion(parked.takeRetries())
                cursor = batch.cursor
                record()
                attaching.followerHandled(batch.entries.count)
                if !batch.entries.isEmpty { downloads.poke() }
                // Paused while the batch was applied: no retries, no tree check, not caught up
                // (the loop's top waits for the pause to end).
                if batch.moreComing || pause.holds(.sync) {
                    progress.markCaughtUp(false)
                    continue
                }
                if !deferred.isEmpty { deferred = try retryDeferred(deferred) }
                record()
                // A check of the tree against the container waits for the feed to be read to the
                // container's cursor: read on first if it moved.
                guard treeChecker.checkIfRequested(at: cursor) else { continue }
                if pause.holds(.sync) { continue }
                progress.markCaughtUp(deferred.isEmpty)
                deleteGuard.feedCaughtUp()
                attaching.followerReachedEnd()
                progress.noteFailure(nil)
                rounds.feedCaughtUp()
                log.logFollowerSucceeded()
                remote.echo.caughtUp()
                let wait = deferred.isEmpty ? feedWait : EngineDelay.deferredRetry
                try container.waitForChanges(after: cursor, timeout: wait, cancellable: stopWaiting)
            } catch {
                progress.noteFailure(error.description)
                // Catching up again: what changed meanwhile is not known until the feed is read.
                progress.markCaughtUp(false)
                rounds.scanNeeded(.catchUp)
                // The first, then a summary per interval while it lasts (an outage, a container
                // refusing the cursor), not once a second; `status` shows the last error meanwhile.
                log.logFollowerFailure(error)
                run.pause(EngineDelay.followerFailurePause)
            }
        }
    }

    private func retryDeferred(_ ids: Set<FileID>) throws(SyncFailure) -> Set<FileID> {
        var still = Set<FileID>()
        for id in ids {
            guard let current = try container.entry(id) else { continue }
            if try !applier.apply(current, force: false) || !parked.unparkIfAbandoned(current) { still.insert(id) }
        }
        return still
    }
}

/// The follower's position as stored in the state database (`feed_cursor`, `deferred_ids`).
private struct FollowerProgress: Equatable {
    var cursor: String
    var deferred: Set<FileID>
}
