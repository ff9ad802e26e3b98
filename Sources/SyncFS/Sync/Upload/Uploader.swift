import Glibc
import Logging
import SyncBackend
import Synchronization

/// The uploader thread: takes ready outbox items oldest first and commits each to the container,
/// carrying out what the container's answer asks for (`Uploader+Conflicts`).
///
/// One upload is a stack of frames, never a recursion: each round of the top frame prepares the
/// entry, uploads its content, commits it and returns an `UploadStep`. A step that asks for other
/// queued changes to go first (a new parent, the holder of a name, the deletes below a folder)
/// pushes them above the frame; the frame's next round runs once they are done.
///
/// A file's content state follows its upload (`ContentLifecycle`): each round's
/// `prepareUpload` takes it (`uploadTaken`: `uploading`, with the permit of what may be sent), a
/// commit makes it clean (`uploadCommitted`), and a frame that ends any other way gives it back
/// (`uploadReturned`: `uploadRefused`).
final class Uploader: Sendable {
    /// Commit attempts of one change per upload before it goes back to the queue (a conflict
    /// answer may ask for a retry on a new base).
    static let roundsPerUpload = 6

    let outbox: Outbox
    let uploads: UploadRecords
    let container: BlockingContainer
    let transfer: ContentTransfer
    let guarded: GuardedUploads
    let merger: ContentMerger
    /// Where a merge's conflict copy learns the container's version (`Conflicts.whileContesting`).
    let conflicts: Conflicts
    let remoteWins: RemoteWins
    let transfers: TransferBoard
    let deviceIdentity: String
    let progress: EngineProgress
    /// Told of each change taken and committed, and where the uploader goes idle (`synced`).
    let rounds: SyncRounds
    let run: EngineRun
    /// While the mount is paused nothing is taken (the queue keeps growing).
    let pause: SyncPause
    /// While the container grants a viewer's rights only, nothing is taken.
    let writeAccess: WriteAccess
    let log: EngineLog
    var logger: Logger { log.logger }
    /// How many rounds each refused directory delete or move has waited for other queued changes
    /// (`ConflictDecision.Situation.roundsWaited`); cleared when it is resolved.
    let waitsForOthers = Mutex<[FileID: Int]>([:])

    init(
        fileSystem: SyncFileSystem, uploads: UploadRecords, container: BlockingContainer, transfer: ContentTransfer,
        guarded: GuardedUploads, merger: ContentMerger, conflicts: Conflicts, remoteWins: RemoteWins,
        progress: EngineProgress, rounds: SyncRounds, run: EngineRun, pause: SyncPause, log: EngineLog
    ) {
        outbox = fileSystem.outbox
        writeAccess = fileSystem.writeAccess
        transfers = fileSystem.transfers
        deviceIdentity = fileSystem.deviceIdentity
        self.uploads = uploads
        self.container = container
        self.transfer = transfer
        self.guarded = guarded
        self.merger = merger
        self.conflicts = conflicts
        self.remoteWins = remoteWins
        self.progress = progress
        self.rounds = rounds
        self.run = run
        self.pause = pause
        self.log = log
    }

    var deleteGuard: DeleteGuard { guarded.deleteGuard }

    /// Takes ready outbox items oldest first and commits them until stopped.
    func runUploads() {
        while run.isRunning {
            // Paused: wait for `resume`, the pause's end, or the engine's stop.
            if pause.waitWhilePaused(.sync) { continue }
            // The mass-delete guard tripped: nothing goes until `release` or `discard`.
            if deleteGuard.isHeld {
                run.pause(EngineDelay.guardHeldPoll)
                continue
            }
            // The container grants a viewer's rights only: nothing is sent, the queue keeps what
            // it holds until an editor's rights come back (`AccessKeeper`).
            if writeAccess.refusesChanges {
                run.pause(EngineDelay.writeAccessPoll)
                continue
            }
            // What is ready now, never waiting for more: a lone change goes at once.
            let ready = outbox.takeReady(upTo: UploadBatch.maximumChanges)
            guard let item = ready.first else {
                // Idle: the mount may have become up to date.
                rounds.check()
                // The outbox wakes the uploader for every change and computes when a waiting
                // item is due; this bound is only a backstop (an idle mount wakes once a minute).
                outbox.waitForWork(maximum: EngineDelay.uploaderBackstop)
                continue
            }
            rounds.uploadTaken()
            let started = ContinuousClock.now
            if ready.count == 1 { upload(item) } else { uploadTogether(ready) }
            // While programs write many files into the folder, uploads take at most about half
            // of one CPU: after each upload the uploader rests as long as it worked.
            if outbox.isBursting {
                run.pause(min(ContinuousClock.now - started, EngineDelay.burstRestMaximum))
            }
        }
    }

    /// One change being uploaded: its item, its rounds so far, what its rounds already tried.
    private struct Frame {
        var item: OutboxItem
        var rounds = 0
        var context: ResolveContext
    }

    /// What waits on the upload's stack: a frame, or a queued change taken when its turn comes.
    private enum Pending {
        case frame(Frame)
        case queued(FileID, depth: Int)
    }

    /// Uploads `item` and whatever it asks to go first (see the type).
    func upload(_ item: OutboxItem) {
        var stack: [Pending] = [.frame(Frame(item: item, context: ResolveContext(depth: 0)))]
        while let pending = stack.popLast() {
            var frame: Frame
            switch pending {
            case .frame(let waiting): frame = waiting
            case .queued(let id, let depth):
                // Gone, or in flight further down this stack: nothing to do here.
                guard let taken = outbox.take(id) else { continue }
                frame = Frame(item: taken, context: ResolveContext(depth: depth))
            }
            guard frame.rounds < Self.roundsPerUpload else {
                failed(frame.item, .local("the entry kept conflicting with the container; will try again"))
                uploads.uploadReturned(frame.item)
                continue
            }
            let step: UploadStep
            do throws(SyncFailure) {
                step = try round(&frame.context, of: frame.item)
            } catch {
                failed(frame.item, error)
                uploads.uploadReturned(frame.item)
                continue
            }
            frame.rounds += 1
            switch step {
            case .done:
                finished(frame.item)
                uploads.uploadReturned(frame.item)
            case .later(let reason):
                failed(frame.item, .local(reason))
                uploads.uploadReturned(frame.item)
            case .again: stack.append(.frame(frame))
            case .first(let others):
                stack.append(.frame(frame))
                let depth = frame.context.depth + 1
                for other in others.reversed() {
                    switch other {
                    case .taken(let item):
                        stack.append(.frame(Frame(item: item, context: ResolveContext(depth: depth))))
                    case .queued(let id): stack.append(.queued(id, depth: depth))
                    }
                }
            }
        }
    }

    /// The change of `item` is done with for now (committed, not needed, or back in the queue).
    func finished(_ item: OutboxItem) {
        if !outbox.isPending(item.fileID) { deleteGuard.finished(item.fileID) }
        progress.noteFailure(nil)
        log.logUploadSucceeded(item)
    }

    /// The change of `item` failed: back to the queue after a pause, the reason recorded.
    func failed(_ item: OutboxItem, _ error: SyncFailure) {
        if case .container(let containerError) = error, containerError.isRetryable {
            progress.noteFailure(containerError.description)
        }
        // The first of a kind, then a summary per interval, not a line per attempt.
        log.logUploadFailure(item, error)
        // Waiting for the container is not failing: no reason is recorded (`status` shows the
        // outage once, not a failing change per file).
        uploads.uploadFailed(
            item, reason: error.isWaiting ? nil : error.description, waitsForContainer: error.waitsForContainer)
    }

    /// What a round's first look at a taken item found (`look`).
    enum RoundWork {
        /// Nothing to commit now: held, not needed, busy (postponed) or refused (recorded).
        case settled
        /// It left the synced set and the container has a version of it (`commitLeavingSyncedSet`).
        case leavesSyncedSet(SyncBase)
        /// Gone locally: a delete against `base`.
        case delete(base: EntryVersion)
        /// The entry's state to commit (content still to read, for a file).
        case put(UploadSnapshot)
    }

    /// The first half of every round, alone or in a batch: the ignore verdict, then
    /// `UploadRecords.prepareUpload`; what needs no commit is settled here.
    func look(at item: OutboxItem) -> RoundWork {
        let verdict = uploads.ignoreVerdict(item.fileID)
        if verdict.isHeld {
            // Stays queued, not taken again until the entry or the ignore rules change.
            outbox.hold(item)
            logger.debug("\(log.logName(item.fileID)) held: \(verdict)")
            return .settled
        }
        if verdict == .leftSyncedSet, let base = uploads.syncBase(of: item.fileID), base.version > 0 {
            return .leavesSyncedSet(base)
        }
        switch uploads.prepareUpload(item.fileID) {
        case .busy:
            outbox.postpone(item, by: EngineDelay.localEntryBusy)
            return .settled
        case .nothing:
            uploads.uploadUnneeded(item)
            return .settled
        case .refused(let reason):
            uploads.uploadFailed(item, reason: reason)
            return .settled
        case .delete(let base):
            return .delete(base: base)
        case .put(let snapshot):
            return .put(snapshot)
        }
    }

    /// One round: prepares the entry and commits it.
    private func round(_ context: inout ResolveContext, of item: OutboxItem) throws(SyncFailure) -> UploadStep {
        switch look(at: item) {
        case .settled: return .done
        case .leavesSyncedSet(let base): return try commitLeavingSyncedSet(item, base: base, context: &context)
        case .delete(let base): return try commitDelete(item, base: base, context: &context)
        case .put(let snapshot): return try commitPut(item, snapshot, context: &context)
        }
    }

    /// An entry that left the synced set: deleted in the container, kept here, held.
    private func commitLeavingSyncedSet(_ item: OutboxItem, base: SyncBase, context: inout ResolveContext)
        throws(SyncFailure) -> UploadStep
    {
        // Changed in the container since this mount synced it: a delete would let that
        // version win over the content here. Both stay: the container's version there, the
        // local copy here, held (a remote change never overwrites a held one).
        if let current = try container.entry(item.fileID), !current.isDeleted, current.version != base.version {
            outbox.hold(item)
            return .done
        }
        let step = try commitDelete(item, base: base.version, context: &context)
        // Deleted in the container, still here: from now on a local-only entry, held as such.
        if case .done = step, !outbox.isPending(item.fileID) { uploads.requeue(item.fileID) }
        return step
    }

    /// Whether the mass-delete guard lets the delete of `item` go now (else it waits or is held).
    func admitsDelete(_ item: OutboxItem, base: EntryVersion) -> Bool {
        guarded.admits(item, guarded.guardedDeletion(item.fileID, base: base))
    }

    func deleteRequest(_ item: OutboxItem, base: EntryVersion) -> CommitRequest {
        CommitRequest(id: item.fileID, baseVersion: base, change: .delete, device: deviceIdentity)
    }

    func putRequest(_ item: OutboxItem, _ snapshot: UploadSnapshot) -> CommitRequest {
        CommitRequest(
            id: item.fileID, baseVersion: snapshot.base?.version ?? 0, change: .put(snapshot.state),
            device: deviceIdentity)
    }

    /// Whether the content just read (its manifest in `snapshot`) may be committed: it was not
    /// written while it was read (else postponed: the new content goes after the quiet delay),
    /// and the mass-delete guard admits it if it is a rewrite it counts.
    func admitsContent(_ item: OutboxItem, _ snapshot: UploadSnapshot, _ content: ContentSnapshot) -> Bool {
        guard uploads.contentUnchanged(content) else {
            outbox.postpone(item, by: EngineDelay.changedWhileUploading)
            return false
        }
        // High-entropy new content for an established file: a rewrite the guard counts.
        let rewrite = guarded.guardedRewrite(
            base: snapshot.base, manifest: snapshot.state.manifest, descriptor: content.descriptor)
        return guarded.admits(item, rewrite)
    }

    private func commitDelete(_ item: OutboxItem, base: EntryVersion, context: inout ResolveContext)
        throws(SyncFailure) -> UploadStep
    {
        guard admitsDelete(item, base: base) else { return .done }
        let request = deleteRequest(item, base: base)
        let outcome: CommitOutcome
        do throws(SyncFailure) {
            outcome = try container.commit(request)
        } catch .container(.invalidRequest(let reason)) {
            // Our base is a tombstone (an edit rebased onto a remote delete, then deleted
            // here too): deleted on both sides, nothing to commit.
            guard let current = try container.entry(item.fileID), current.isDeleted else {
                throw .container(.invalidRequest(reason))
            }
            uploads.uploadCommitted(item, entry: current)
            return .done
        }
        return try resolve(outcome, for: item, request: request, snapshot: nil, context: &context)
    }

    private func commitPut(_ item: OutboxItem, _ prepared: UploadSnapshot, context: inout ResolveContext)
        throws(SyncFailure) -> UploadStep
    {
        var snapshot = prepared
        // A parent not in the container yet goes first (once per upload; a chain of new folders
        // nests at most 64 deep).
        if let parent = snapshot.uncommittedParent, !context.parentTried, context.depth < 64 {
            context.parentTried = true
            if let content = snapshot.content { close(content.descriptor) }
            return .first([.queued(parent)])
        }
        if let content = snapshot.content {
            defer { close(content.descriptor) }
            snapshot.state.manifest = try uploadContent(item, content)
            guard admitsContent(item, snapshot, content) else { return .done }
        }
        let request = putRequest(item, snapshot)
        return try resolve(
            try container.commit(request), for: item, request: request, snapshot: snapshot, context: &context)
    }

    /// Sends the chunks of `content` the container lacks; returns the manifest.
    private func uploadContent(_ item: OutboxItem, _ content: ContentSnapshot) throws(SyncFailure) -> [ChunkRef] {
        var totals = ContentTransfer.Totals()
        defer { progress.add(totals) }
        transfers.started(item.fileID, direction: .upload, total: content.length)
        defer { transfers.ended(item.fileID) }
        let started = outbox.now
        let manifest = try transfer.upload(
            descriptor: content.descriptor, length: content.length, totals: &totals,
            progress: { [transfers] in transfers.progressed(item.fileID, done: $0) })
        log.logUploadTransfer(
            item.fileID, bytes: content.length, chunks: manifest.count, sent: totals.chunksUploaded,
            sentBytes: totals.encodedBytesUploaded, started: started)
        return manifest
    }
}

/// What one round of an upload came to (`Uploader.upload` acts on it).
enum UploadStep {
    /// Finished for now: committed, not needed, or handed back to the queue (postponed).
    case done
    /// Try again at once, on the updated base.
    case again
    /// These queued changes go first, in order; then this one is tried again.
    case first([UploadFirst])
    /// It cannot go yet: back to the queue after a pause, with the reason `status` shows (its
    /// parent is not in the container yet, say). Waiting, not an error thrown.
    case later(String)
}

/// A queued change that goes before the one that asked for it.
enum UploadFirst {
    /// Taken from the queue already.
    case taken(OutboxItem)
    /// Taken from the queue when its turn comes (nothing, if it is gone or in flight by then).
    case queued(FileID)
}
