import Glibc
import Logging
import SyncBackend

/// The uploader's side of the mass-delete guard (`DeleteGuard`; doc/SEMANTICS.md, "Mass-delete
/// guard"), and `release` / `discard`.
extension SyncEngine {
    /// Makes the guard for `options` (nil thresholds: `--no-guard`), restoring a recorded hold.
    static func makeDeleteGuard(
        fileSystem: SyncFileSystem, thresholds: DeleteWindow.Thresholds?, logger: Logger
    ) -> DeleteGuard {
        let stored = fileSystem.storedFacts[.guardHold]
        if let stored {
            logger.warning(
                "mass-delete guard: still holding the uploads (\(stored.changes) deletions or replacements since \(Self.timestamp(stored.since))); `syncfs-mount release` or `discard` ends it"
            )
        }
        return DeleteGuard(
            thresholds: thresholds, restoring: stored,
            clock: { [outbox = fileSystem.outbox] in outbox.now },
            record: { [store = fileSystem.store] hold in store.factSet(.guardHold, hold) },
            publish: { [events = fileSystem.changeEvents] event, message in
                let kind: ChangeEvent.Kind
                switch event {
                case .held:
                    kind = .guardHeld
                    logger.warning("mass-delete guard tripped: \(message)")
                case .released: kind = .guardReleased
                case .discarded: kind = .guardDiscarded
                }
                events.publish(
                    ChangeEvent(kind: kind, path: "", origin: nil, fileID: nil, type: nil, message: message))
            })
    }

    /// Asks the guard whether the guarded change of `item` may be committed now; if not, the
    /// item waits (for the stream of guarded changes to pause, or, held, until `release`).
    /// Returns true if it may go.
    func guardAdmits(_ item: OutboxItem, _ change: GuardedChange) -> Bool {
        var verdict = consider(item.fileID, change)
        if verdict == .go && deleteGuard.lookAheadDue(for: item.fileID)
            && sightQueuedDeletions(except: item.fileID) > 0
        {
            // Deletions queued behind it (the uploader was busy) are counted now: it waits for
            // them to pause, or they trip the guard, before any of them goes.
            verdict = consider(item.fileID, change)
        }
        switch verdict {
        case .go:
            deleteGuard.admit(item.fileID)
            return true
        case .wait(let until):
            fileSystem.outbox.postpone(item, by: .nanoseconds(max(0, until - fileSystem.outbox.now)))
            return false
        case .held:
            // The uploader takes nothing while held; the item is looked at again after release.
            fileSystem.outbox.postpone(item, by: EngineDelay.heldByGuard)
            return false
        }
    }

    private func consider(_ id: FileID, _ change: GuardedChange) -> DeleteWindow.Verdict {
        deleteGuard.consider(
            id, change, treeSize: { uploads.committedEntryCount() }, lastSeq: fileSystem.outbox.lastSeq)
    }

    /// Counts every queued delete of an entry the container has that the guard has not seen yet
    /// (ready or not); returns how many. One pass over the queue, before a guarded change goes
    /// (at most twice a second: `DeleteGuard.lookAheadDue`).
    private func sightQueuedDeletions(except id: FileID) -> Int {
        let unseen = fileSystem.outbox.items.map(\.fileID).filter { $0 != id && !deleteGuard.isKnown($0) }
        let deletions = uploads.committedDeletions(among: unseen)
        for deletion in deletions { _ = consider(deletion, .deletion) }
        return deletions.count
    }

    /// `release`: everything queued now goes to the container, none of it counted again.
    /// Returns false if the guard was not holding anything.
    func releaseGuard() -> Bool {
        let released = deleteGuard.release(queued: fileSystem.outbox.items.map(\.fileID))
        if released {
            logger.notice("mass-delete guard released: the held changes go to the container")
            fileSystem.outbox.poke()
        }
        return released
    }

    /// What `discard` did.
    enum DiscardOutcome: Equatable {
        case notHeld
        /// `restored` held changes were undone; `kept` could not be (they stay queued and held).
        case discarded(restored: Int, kept: Int)
    }

    /// `discard`: every queued delete of an entry the container has, and every held rewrite, is
    /// undone: the container's version comes back here (as an attach brings it: a placeholder,
    /// or downloaded if pinned) and the queued change is dropped; nothing is uploaded. Other
    /// queued changes stay and go once the guard is no longer held. If any could not be undone
    /// (the container did not answer, the entry is in use), the guard stays held.
    func discardGuarded() throws(SyncFailure) -> DiscardOutcome {
        guard let hold = deleteGuard.currentHold else { return .notHeld }
        // Parents were usually deleted after their children: undo the newest first.
        var targets: [FileID] = []
        var rewrites: Set<FileID> = []
        for item in fileSystem.outbox.items.sorted(by: { $0.seq > $1.seq }) {
            let id = item.fileID
            if uploads.isCommittedDeletion(id) {
                targets.append(id)
                continue
            }
            // Counted, or rewritten before the guard tripped but not looked at yet.
            var rewritten = hold.rewrites.contains(id)
            if !rewritten && item.seq <= hold.lastSeq { rewritten = try isUnseenRewrite(id) }
            if rewritten {
                targets.append(id)
                rewrites.insert(id)
            }
        }
        var restored = 0
        var kept = 0
        for id in targets {
            guard let item = fileSystem.outbox.take(id) else {
                kept += 1
                continue
            }
            let entry: RemoteEntry?
            do throws(SyncFailure) {
                entry = try remoteEntry(id)
            } catch {
                fileSystem.outbox.postpone(item, by: EngineDelay.heldByGuard)
                throw error
            }
            guard let entry else {
                // The container has no such entry: nothing to undo, nothing to send.
                uploads.uploadUnneeded(item)
                deleteGuard.finished(id)
                restored += 1
                continue
            }
            // The base's content is the container's: forgotten, so the container's content is
            // downloaded over the local one (otherwise only the metadata would be applied).
            if rewrites.contains(id) { uploads.forgetBaseContent(id) }
            do throws(SyncFailure) {
                try takeRemote(entry, item: item)
            } catch {
                fileSystem.outbox.postpone(item, by: EngineDelay.heldByGuard)
                throw error
            }
            if fileSystem.outbox.isPending(id) {
                kept += 1
            } else {
                deleteGuard.finished(id)
                restored += 1
            }
        }
        if kept == 0 {
            deleteGuard.discarded(restored: restored, kept: kept)
            logger.notice("mass-delete guard: \(restored) held changes discarded (restored from the container)")
            fileSystem.outbox.poke()
        }
        return .discarded(restored: restored, kept: kept)
    }

    /// True if the queued change of `id` gives new content to a file the container has. Reads
    /// the file as an upload would (its chunks may reach the container: nothing refers to them).
    private func isUnseenRewrite(_ id: FileID) throws(SyncFailure) -> Bool {
        guard case .put(let snapshot) = uploads.prepareUpload(id) else { return false }
        guard let content = snapshot.content else { return false }
        defer { close(content.descriptor) }
        guard let base = snapshot.base, base.version > 0 else { return false }
        var totals = ContentTransfer.Totals()
        defer { addTotals(totals) }
        let manifest = try transfer.upload(descriptor: content.descriptor, length: content.length, totals: &totals)
        return manifest != base.manifest
    }

    /// The guard's part of `status`.
    func guardStatus() -> GuardStatus {
        let snapshot = deleteGuard.snapshot
        var status = GuardStatus(enabled: deleteGuard.thresholds != nil, held: snapshot.held)
        status.counted = snapshot.counted
        status.waiting = snapshot.waiting
        if let hold = snapshot.hold {
            status.heldSince = Self.timestamp(hold.since)
            status.heldChanges = hold.changes
        }
        if let thresholds = deleteGuard.thresholds {
            status.deletes = thresholds.changes
            status.fraction = thresholds.fraction
            status.minimum = thresholds.minimumForFraction
            status.windowSeconds = Double(thresholds.window) / 1e9
        }
        return status
    }
}

extension UploadRecords {
    /// The entries the container has for this mount, as far as known here (the fraction of the
    /// guard is of this).
    func committedEntryCount() -> Int { live.transact { $0.bases.count } }

    /// Forgets which content the base of `id` had (its manifest), so the container's version is
    /// downloaded when applied (`RemoteChanges.plan` downloads only content that differs).
    func forgetBaseContent(_ id: FileID) {
        live.transact { tree in
            guard var base = tree.bases[id] else { return }
            base.manifest = []
            tree.bases[id] = base
            tree.record([.syncBaseSet(id, base)])
        }
    }

    /// Those of `ids` that are gone locally and that the container has, in one transaction.
    func committedDeletions(among ids: [FileID]) -> [FileID] {
        live.transact { tree in
            ids.filter { id in
                guard (tree.bases[id]?.version ?? 0) > 0 else { return false }
                return tree.node(withID: id).map(\.isUnlinked) ?? true
            }
        }
    }

    /// True if `id` is gone locally and the container has it: its queued change is a delete.
    func isCommittedDeletion(_ id: FileID) -> Bool {
        live.transact { tree in
            guard (tree.bases[id]?.version ?? 0) > 0 else { return false }
            guard let node = tree.node(withID: id) else { return true }
            return node.isUnlinked
        }
    }
}

/// The mass-delete guard in `status` (doc/CLI.md, "status").
public struct GuardStatus: Codable, Sendable {
    /// False with `--no-guard` (a hold recorded earlier still holds).
    public var enabled: Bool
    /// Tripped: nothing is uploaded until `release` or `discard`.
    public var held: Bool
    /// When it tripped (RFC 3339, UTC), and how many guarded changes were counted then.
    public var heldSince: String?
    public var heldChanges: Int?
    /// Guarded changes (deletions and replacements) counted within the window now.
    public var counted: Int = 0
    /// Guarded changes waiting for the stream of them to pause, or held.
    public var waiting: Int = 0
    /// The thresholds (absent with `--no-guard`).
    public var deletes: Int?
    public var fraction: Double?
    public var minimum: Int?
    public var windowSeconds: Double?

    public init(enabled: Bool, held: Bool) {
        self.enabled = enabled
        self.held = held
    }
}

extension EngineDelay {
    /// A change held by the tripped mass-delete guard is looked at again after 1 s (the uploader
    /// takes nothing while held, so this only bounds how soon it goes after `release`).
    static let heldByGuard: Duration = .seconds(1)
    /// While held, the uploader looks whether it was released four times a second.
    static let guardHeldPoll: Duration = .milliseconds(250)
}
