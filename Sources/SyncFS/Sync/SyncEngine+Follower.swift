import Foundation
import SyncBackend

extension SyncEngine {
    /// Reads the change feed from the stored cursor and applies it, until stopped.
    ///
    /// The cursor is stored after the changes before it were applied (same ordered store), so a
    /// crash re-applies at most a batch, and applying is idempotent (bases skip what is known).
    /// Changes that cannot be applied yet are kept in the `deferred_ids` fact and retried.
    func runFollower() {
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
        while isRunning {
            do throws(SyncFailure) {
                let batch = try container.changes(after: cursor, limit: 256)
                for entry in batch.entries where isRunning {
                    remote.noteFeedReached(entry.version)
                    deleteGuard.arrived(entry.version)
                    if try apply(entry, force: false), unparkIfAbandoned(entry) {
                        deferred.remove(entry.id)
                    } else {
                        deferred.insert(entry.id)
                    }
                    remote.noteFeedHandled(entry.version)
                }
                // Stopped in the middle of the batch: its cursor must not be stored, or the rest of
                // the batch would never be applied (the next mount reads the batch again).
                guard isRunning else { break }
                deferred.formUnion(
                    unparksToRetry.withLock { waiting in
                        defer { waiting = [] }
                        return waiting
                    })
                cursor = batch.cursor
                record()
                followerHandled(batch.entries.count)
                if !batch.entries.isEmpty { downloads.poke() }
                if batch.moreComing {
                    markCaughtUp(false)
                    continue
                }
                if !deferred.isEmpty { deferred = try retryDeferred(deferred) }
                record()
                // A check of the tree against the container waits for the feed to be read to the
                // container's cursor: read on first if it moved.
                guard checkTreeIfRequested(at: cursor) else { continue }
                markCaughtUp(deferred.isEmpty)
                deleteGuard.feedCaughtUp()
                followerReachedEnd()
                noteFailure(nil)
                logFollowerSucceeded()
                let wait = deferred.isEmpty ? options.feedWait : EngineDelay.deferredRetry
                try container.waitForChanges(after: cursor, timeout: wait, cancellable: stopWaiting)
            } catch {
                noteFailure(error.description)
                // Catching up again: what changed meanwhile is not known until the feed is read.
                markCaughtUp(false)
                // The first, then a summary per interval while it lasts (an outage, a container
                // refusing the cursor), not once a second; `status` shows the last error meanwhile.
                logFollowerFailure(error)
                sleepWhileRunning(EngineDelay.followerFailurePause)
            }
        }
    }

    private func retryDeferred(_ ids: Set<FileID>) throws(SyncFailure) -> Set<FileID> {
        var still = Set<FileID>()
        for id in ids {
            guard let current = try container.entry(id) else { continue }
            if try !apply(current, force: false) || !unparkIfAbandoned(current) { still.insert(id) }
        }
        return still
    }

    /// Applies one remote entry, fetching missing parents first and downloading content.
    /// Returns false if it must be retried later. `children` are the entries waiting for this
    /// one as their missing parent: an entry among them again means the parents form a cycle,
    /// which is refused (and never fetched around forever).
    func apply(
        _ entry: RemoteEntry, force: Bool, giving item: OutboxItem? = nil, depth: Int = 0, children: Set<FileID> = []
    ) throws(SyncFailure) -> Bool {
        for _ in 0..<3 {
            switch remote.planRemote(entry, force: force) {
            case .skip, .localChangesPending:
                return true
            case .refused(let reason):
                refuse(entry, reason)
                return true
            case .later:
                return false
            case .needsParent(let parentID):
                guard depth < 64 else { return false }
                guard !children.contains(parentID) else {
                    refuse(entry, "its parents form a cycle (\(parentID) is below it)")
                    return true
                }
                let parent = try container.entry(parentID)
                // A child of a refused parent is refused too: waiting for the parent would keep it
                // deferred, and the follower polling for it, for as long as the container lies.
                guard !refusals.isRefused(parentID) else {
                    refuse(entry, "its parent \(parentID) was refused")
                    return true
                }
                guard let parent, !parent.isDeleted else { return false }
                // A forced change forces its missing ancestors too (their local deletes lose).
                guard try apply(parent, force: force, depth: depth + 1, children: children.union([entry.id])) else {
                    return false
                }
                if refusals.isRefused(parentID) {
                    refuse(entry, "its parent \(parentID) was refused")
                    return true
                }
            case .apply(let needsContent):
                var contentFile: String?
                if needsContent {
                    let path = remote.temporaryContentPath()
                    let base = uploads.syncBase(of: entry.id)
                    var totals = ContentTransfer.Totals()
                    defer { addTotals(totals) }
                    do {
                        try transfer.download(
                            entry.state.manifest, to: path, local: remote.reusableContentPath(entry.id),
                            localManifest: base?.manifest ?? [], totals: &totals)
                    } catch {
                        unlink(path)
                        throw error
                    }
                    contentFile = path
                }
                let outcome = remote.applyRemote(entry, contentFile: contentFile, force: force, giving: item)
                if contentFile != nil { fileSystem.residency.contentActivity.note() }
                // An installed content file was renamed away; one the change no longer needed
                // (the file became a placeholder meanwhile) is removed here.
                if let contentFile { unlink(contentFile) }
                if case .apply(let needed) = outcome {
                    // The file became local meanwhile: plan again, with a download this time.
                    if needed && contentFile == nil { continue }
                    return true
                }
                switch outcome {
                case .skip, .localChangesPending: return true
                case .refused(let reason):
                    refuse(entry, reason)
                    return true
                case .later: return false
                case .needsParent, .apply: break
                }
            }
        }
        return false
    }

    /// Records a remote entry Core refused (logged once per entry, listed by `status`).
    func refuse(_ entry: RemoteEntry, _ reason: String) {
        refusals.refuse(entry, because: reason, logger: logger)
    }
}

/// The follower's position as stored in the state database (`feed_cursor`, `deferred_ids`).
private struct FollowerProgress: Equatable {
    var cursor: String
    var deferred: Set<FileID>
}
