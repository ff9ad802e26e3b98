import Glibc
import Logging
import SyncBackend

/// The uploader's side of the mass-delete guard (`DeleteGuard`; doc/SEMANTICS.md, "Mass-delete
/// guard"): what of a change the guard counts and whether it may go now; and `release` /
/// `discard`, which end a hold.
final class GuardedUploads: Sendable {
    let deleteGuard: DeleteGuard
    private let fileSystem: SyncFileSystem
    private let uploads: UploadRecords
    private let container: BlockingContainer
    private let transfer: ContentTransfer
    private let remoteWins: RemoteWins
    private let history: HistoryService
    private let progress: EngineProgress
    private let logger: Logger

    init(
        deleteGuard: DeleteGuard, fileSystem: SyncFileSystem, uploads: UploadRecords, container: BlockingContainer,
        transfer: ContentTransfer, remoteWins: RemoteWins, history: HistoryService, progress: EngineProgress,
        logger: Logger
    ) {
        self.deleteGuard = deleteGuard
        self.fileSystem = fileSystem
        self.uploads = uploads
        self.container = container
        self.transfer = transfer
        self.remoteWins = remoteWins
        self.history = history
        self.progress = progress
        self.logger = logger
    }

    /// Makes the guard (nil thresholds: `--no-guard`), restoring a recorded hold.
    static func makeDeleteGuard(
        fileSystem: SyncFileSystem, thresholds: DeleteWindow.Thresholds?, logger: Logger
    ) -> DeleteGuard {
        let stored = fileSystem.storedFacts[.guardHold]
        if let stored {
            logger.warning(
                "mass-delete guard: still holding the uploads (\(stored.changes) deletions or replacements since \(RFC3339.utc(stored.since))); `syncfs-mount release` or `discard` ends it"
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

    /// Asks the guard whether the change of `item` may be committed now, if it is a guarded
    /// change (`change`; nil: not guarded, it goes — but deletions queued behind it may still be
    /// counted); if not, the item waits (for the stream of guarded changes to pause, or, held,
    /// until `release`). Returns true if it may go.
    func admits(_ item: OutboxItem, _ change: GuardedChange?) -> Bool {
        guard let change, deleteGuard.isWatching else { return true }
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

    /// What the guard counts of the delete of `id`, whose container version is `base`: nothing
    /// for an entry that is not established (`DeleteGuard.isEstablished`); a rewrite when a live
    /// file now has its name (a save by rename, `mv new old`), counted only if that file's
    /// content is high-entropy (`ContentEntropy`); otherwise a deletion.
    func guardedDeletion(_ id: FileID, base: EntryVersion) -> GuardedChange? {
        guard deleteGuard.isWatching, deleteGuard.isEstablished(base) else { return nil }
        guard let replacement = uploads.replacement(ofDeleted: id) else {
            return GuardedChange(kind: .deletion, replaced: base)
        }
        let descriptor = open(fileSystem.cache.path(for: replacement), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return ContentEntropy.isHigh(descriptor: descriptor) ? GuardedChange(kind: .rewrite, replaced: base) : nil
    }

    /// What the guard counts of new content (read from `descriptor`, its manifest `manifest`)
    /// for a file whose container version is `base`: a rewrite if the version is established,
    /// the content differs and looks random (`ContentEntropy`); otherwise nothing.
    func guardedRewrite(base: SyncBase?, manifest: [ChunkRef], descriptor: Int32) -> GuardedChange? {
        guard deleteGuard.isWatching, let base, base.version > 0, manifest != base.manifest,
            deleteGuard.isEstablished(base.version), ContentEntropy.isHigh(descriptor: descriptor)
        else { return nil }
        return GuardedChange(kind: .rewrite, replaced: base.version)
    }

    private func consider(_ id: FileID, _ change: GuardedChange) -> DeleteWindow.Verdict {
        deleteGuard.consider(
            id, change, treeSize: { uploads.committedEntryCount() }, lastSeq: fileSystem.outbox.lastSeq)
    }

    /// Counts every queued delete of an established entry that the guard has not seen yet
    /// (ready or not; not one whose name a live entry took, which is judged when it goes);
    /// returns how many. One pass over the queue, before a guarded change goes (at most twice a
    /// second: `DeleteGuard.lookAheadDue`).
    private func sightQueuedDeletions(except id: FileID) -> Int {
        let unseen = fileSystem.outbox.items.map(\.fileID).filter { $0 != id && !deleteGuard.isKnown($0) }
        let established = uploads.committedDeletions(among: unseen).filter { deleteGuard.isEstablished($0.base) }
        let replaced = uploads.replacements(ofDeleted: established.map(\.id))
        let deletions = established.filter { replaced[$0.id] == nil }
        for deletion in deletions {
            _ = consider(deletion.id, GuardedChange(kind: .deletion, replaced: deletion.base))
        }
        return deletions.count
    }

    /// `release`: everything queued now goes to the container, none of it counted again.
    /// Returns false if the guard was not holding anything.
    func release() -> Bool {
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
        /// Nothing was undone: `count` changes the guard let go before it tripped were still
        /// being committed after `sentLandingWait` (the guard still holds).
        case sentStillLanding(count: Int)
    }

    /// `discard`: every queued delete of an entry the container has, and every held rewrite, is
    /// undone: the container's version comes back here (as an attach brings it: a placeholder,
    /// or downloaded if pinned) and the queued change is dropped; nothing is uploaded. Other
    /// queued changes stay and go once the guard is no longer held. If any could not be undone
    /// (the container did not answer, the entry is in use), the guard stays held.
    ///
    /// The burst's changes that went before it tripped are restored from the history; one still
    /// being committed would land after its restore and undo it, so they land first: `discard`
    /// waits up to `sentWait` for them, and if one is still on its way then, undoes nothing
    /// (`sentStillLanding`: the guard stays held; `discard` is run again). While held the
    /// uploader starts no commit (`uploadAlone` stops too), so none starts after the wait.
    func discard(sentWait: Duration = sentLandingWait) throws(SyncFailure) -> DiscardOutcome {
        guard let hold = deleteGuard.currentHold else { return .notHeld }
        guard waitUntilLanded(hold.sent, within: sentWait) else {
            logger.warning("mass-delete guard: changes sent before it tripped are still on their way; discard again")
            return .sentStillLanding(count: hold.sent.count)
        }
        let (targets, rewrites) = try heldChanges(of: hold)
        var restored = 0
        var kept = 0
        for id in targets {
            if try undo(id, rewritten: rewrites.contains(id)) { restored += 1 } else { kept += 1 }
        }
        // The burst's first changes, which went before it tripped, come back from the history.
        if kept == 0 && !hold.sent.isEmpty {
            let sent = restoreSent(hold.sent)
            restored += sent.restored
            kept += sent.kept
            if sent.kept == 0 { deleteGuard.sentRestored() }
        }
        if kept == 0 {
            deleteGuard.discarded(restored: restored, kept: kept)
            logger.notice("mass-delete guard: \(restored) held changes discarded (restored from the container)")
            fileSystem.outbox.poke()
        }
        return .discarded(restored: restored, kept: kept)
    }

    /// How long `discard` waits for the burst's changes already sent to reach the container.
    static let sentLandingWait: Duration = .seconds(10)

    /// Waits until the uploader has none of `sent` in flight (committed, or back in the queue);
    /// false if one still is after `wait`.
    private func waitUntilLanded(_ sent: [SentChange], within wait: Duration) -> Bool {
        let deadline = ContinuousClock.now + wait
        let ids = sent.map(\.id)
        while fileSystem.outbox.anyInFlight(ids) {
            guard ContinuousClock.now < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    /// The queued changes `discard` undoes, newest first (parents were usually deleted after
    /// their children): every delete of an entry the container has, and every rewrite counted,
    /// or made before the guard tripped but not looked at yet.
    private func heldChanges(of hold: GuardHold) throws(SyncFailure) -> (targets: [FileID], rewrites: Set<FileID>) {
        var targets: [FileID] = []
        var rewrites: Set<FileID> = []
        for item in fileSystem.outbox.items.sorted(by: { $0.seq > $1.seq }) {
            let id = item.fileID
            if uploads.isCommittedDeletion(id) {
                targets.append(id)
                continue
            }
            var rewritten = hold.rewrites.contains(id)
            if !rewritten && item.seq <= hold.lastSeq { rewritten = try isUnseenRewrite(id) }
            if rewritten {
                targets.append(id)
                rewrites.insert(id)
            }
        }
        return (targets, rewrites)
    }

    /// Undoes the queued change of `id`: the container's version comes back here and the change
    /// is dropped. False if it stays queued (taken by the uploader, or in use here).
    private func undo(_ id: FileID, rewritten: Bool) throws(SyncFailure) -> Bool {
        guard let item = fileSystem.outbox.take(id) else { return false }
        let entry: RemoteEntry?
        do throws(SyncFailure) {
            entry = try container.entry(id)
        } catch {
            fileSystem.outbox.postpone(item, by: EngineDelay.heldByGuard)
            throw error
        }
        guard let entry else {
            // The container has no such entry: nothing to undo, nothing to send.
            uploads.uploadUnneeded(item)
            deleteGuard.finished(id)
            return true
        }
        // The base's content is the container's: forgotten, so the container's content is
        // downloaded over the local one (otherwise only the metadata would be applied).
        if rewritten { uploads.forgetBaseContent(id) }
        do throws(SyncFailure) {
            try remoteWins.take(entry, replacing: item)
        } catch {
            fileSystem.outbox.postpone(item, by: EngineDelay.heldByGuard)
            throw error
        }
        guard !fileSystem.outbox.isPending(id) else { return false }
        deleteGuard.finished(id)
        return true
    }

    /// Restores the guarded changes that reached the container before the guard tripped, as
    /// `restore` would: a deleted entry from the trash, a rewritten file's replaced version. One
    /// that cannot be restored for good (no history kept, the version expired, the name taken)
    /// is logged and counted as restored; if one may work later (the container did not answer),
    /// they all count as `kept`, to be tried again by the next `discard` (one restored already
    /// is then found current, or its tombstone gone, and skipped).
    private func restoreSent(_ sent: [SentChange]) -> (restored: Int, kept: Int) {
        let orders = sent.map { RestoreOrder(target: .fileID($0.id), version: $0.isRewrite ? $0.replaced : nil) }
        let (report, failures) = history.restoreEach(orders)
        if failures.contains(where: \.isRetryable) { return (0, sent.count) }
        for failure in failures {
            logger.warning("mass-delete guard: cannot bring back a change sent before the guard tripped: \(failure)")
        }
        for skipped in report.skipped {
            logger.warning("mass-delete guard: cannot bring back \(skipped.path): \(skipped.reason)")
        }
        return (sent.count, 0)
    }

    /// True if the queued change of `id` is a rewrite the guard counts (`guardedRewrite`). Reads
    /// the file as an upload would (its chunks may reach the container: nothing refers to them).
    private func isUnseenRewrite(_ id: FileID) throws(SyncFailure) -> Bool {
        guard case .put(let snapshot) = uploads.prepareUpload(id, taking: false) else { return false }
        guard let content = snapshot.content else { return false }
        defer { close(content.descriptor) }
        guard let base = snapshot.base, base.version > 0, deleteGuard.isEstablished(base.version),
            ContentEntropy.isHigh(descriptor: content.descriptor)
        else { return false }
        var totals = ContentTransfer.Totals()
        defer { progress.add(totals) }
        let manifest = try transfer.upload(descriptor: content.descriptor, length: content.length, totals: &totals)
        return manifest != base.manifest
    }

    /// The guard's part of `status`.
    func status() -> GuardStatus {
        let snapshot = deleteGuard.snapshot
        var status = GuardStatus(enabled: deleteGuard.thresholds != nil, held: snapshot.held)
        status.counted = snapshot.counted
        status.waiting = snapshot.waiting
        if let hold = snapshot.hold {
            status.heldSince = RFC3339.utc(hold.since)
            status.heldChanges = hold.changes
        }
        if let thresholds = deleteGuard.thresholds {
            status.deletes = thresholds.changes
            status.rewrites = thresholds.rewrites
            status.fraction = thresholds.fraction
            status.minimum = thresholds.minimumForFraction
            status.windowSeconds = Double(thresholds.window) / 1e9
            status.ageSeconds = Double(thresholds.establishedAge) / 1e9
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
            tree.setBase(id, base)
        }
    }

    /// Those of `ids` that are gone locally and that the container has, with the container's
    /// version, in one transaction.
    func committedDeletions(among ids: [FileID]) -> [(id: FileID, base: EntryVersion)] {
        live.transact { tree in
            ids.compactMap { id in
                guard let version = tree.bases[id]?.version, version > 0 else { return nil }
                guard tree.node(withID: id).map(\.isUnlinked) ?? true else { return nil }
                return (id, version)
            }
        }
    }

    /// The live file that now has the name the container has for the deleted entry `id` (a
    /// save by rename, `mv new old`), if any.
    func replacement(ofDeleted id: FileID) -> FileID? { replacements(ofDeleted: [id])[id] }

    /// For each of the deleted entries `ids` whose name (as the container has it) a live file
    /// now has, that file: one read of the state database and one transaction. What cannot be
    /// read counts as no replacement, so such a delete is counted as a deletion (the safe side).
    func replacements(ofDeleted ids: [FileID]) -> [FileID: FileID] {
        guard !ids.isEmpty, let states = try? store.baseStates(of: ids) else { return [:] }
        return live.transact { tree in
            var found: [FileID: FileID] = [:]
            for (id, state) in states {
                guard let parent = state.parent, !state.name.isEmpty, let folder = tree.liveDirectory(withID: parent),
                    let holder = tree.child(of: folder, named: FileName(bytes: state.name)), holder.fileID != id,
                    holder.kind == .file
                else { continue }
                found[id] = holder.fileID
            }
            return found
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
    public var rewrites: Int?
    public var fraction: Double?
    public var minimum: Int?
    public var windowSeconds: Double?
    /// How long a version this mount saw arrive counts as new (`--guard-age`).
    public var ageSeconds: Double?

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
