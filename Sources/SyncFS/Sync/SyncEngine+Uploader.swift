import Glibc
import SyncBackend

extension SyncEngine {
    /// Takes ready outbox items oldest first and commits them until stopped.
    func runUploader() {
        while isRunning {
            // The mass-delete guard tripped: nothing goes until `release` or `discard`.
            if deleteGuard.isHeld {
                sleepWhileRunning(EngineDelay.guardHeldPoll)
                continue
            }
            guard let item = fileSystem.outbox.takeNext() else {
                // The outbox wakes the uploader for every change and computes when a waiting
                // item is due; this bound is only a backstop (an idle mount wakes once a minute).
                fileSystem.outbox.waitForWork(maximum: EngineDelay.uploaderBackstop)
                continue
            }
            upload(item, depth: 0)
        }
    }

    /// Commits one queued entry; resolves what the container's answer asks for.
    func upload(_ item: OutboxItem, depth: Int) {
        do throws(SyncFailure) {
            try attempt(item, depth: depth)
            if !fileSystem.outbox.isPending(item.fileID) { deleteGuard.finished(item.fileID) }
            noteFailure(nil)
            logUploadSucceeded(item)
        } catch {
            if case .container(let containerError) = error, containerError.isRetryable {
                noteFailure(containerError.description)
            }
            // The first of a kind, then a summary per interval, not a line per attempt.
            logUploadFailure(item, error)
            // Waiting for the container is not failing: no reason is recorded (`status` shows the
            // outage once, not a failing change per file).
            uploads.uploadFailed(
                item, reason: error.isWaiting ? nil : error.description, waitsForContainer: error.waitsForContainer)
        }
    }

    func commit(_ request: CommitRequest) throws(SyncFailure) -> CommitOutcome {
        try container.commit(request)
    }

    func remoteEntry(_ id: FileID) throws(SyncFailure) -> RemoteEntry? {
        try container.entry(id)
    }

    private func attempt(_ item: OutboxItem, depth: Int) throws(SyncFailure) {
        // A few rounds: a conflict answer may ask for a retry on a new base.
        var context = ResolveContext(depth: depth)
        for _ in 0..<6 {
            switch uploads.prepareUpload(item.fileID) {
            case .busy:
                fileSystem.outbox.postpone(item, by: EngineDelay.localEntryBusy)
                return
            case .nothing:
                uploads.uploadUnneeded(item)
                return
            case .refused(let reason):
                uploads.uploadFailed(item, reason: reason)
                return
            case .delete(let base):
                guard guardAdmits(item, guardedDeletion(item.fileID, base: base)) else { return }
                let request = CommitRequest(
                    id: item.fileID, baseVersion: base, change: .delete, device: fileSystem.deviceIdentity)
                let outcome: CommitOutcome
                do throws(SyncFailure) {
                    outcome = try commit(request)
                } catch .container(.invalidRequest(let reason)) {
                    // Our base is a tombstone (an edit rebased onto a remote delete, then deleted
                    // here too): deleted on both sides, nothing to commit.
                    guard let current = try remoteEntry(item.fileID), current.isDeleted else {
                        throw .container(.invalidRequest(reason))
                    }
                    uploads.uploadCommitted(item, entry: current)
                    return
                }
                if try resolve(outcome, for: item, request: request, snapshot: nil, context: &context) {
                    return
                }
            case .put(var snapshot):
                if let parent = snapshot.uncommittedParent, depth < 64 {
                    if let parentItem = fileSystem.outbox.take(parent) {
                        upload(parentItem, depth: depth + 1)
                    }
                }
                if let content = snapshot.content {
                    defer { close(content.descriptor) }
                    var totals = ContentTransfer.Totals()
                    defer { addTotals(totals) }
                    let board = fileSystem.transfers
                    board.started(item.fileID, direction: .upload, total: content.length)
                    defer { board.ended(item.fileID) }
                    let started = fileSystem.outbox.now
                    snapshot.state.manifest = try transfer.upload(
                        descriptor: content.descriptor, length: content.length, totals: &totals,
                        progress: { board.progressed(item.fileID, done: $0) })
                    logUploadTransfer(
                        item.fileID, bytes: content.length, chunks: snapshot.state.manifest.count,
                        sent: totals.chunksUploaded, sentBytes: totals.encodedBytesUploaded, started: started)
                    guard uploads.contentUnchanged(content) else {
                        // Written while it was read: upload the new content after the quiet delay.
                        fileSystem.outbox.postpone(item, by: EngineDelay.changedWhileUploading)
                        return
                    }
                    // High-entropy new content for an established file: a rewrite the guard counts.
                    let rewrite = guardedRewrite(
                        base: snapshot.base, manifest: snapshot.state.manifest, descriptor: content.descriptor)
                    guard guardAdmits(item, rewrite) else { return }
                }
                let request = CommitRequest(
                    id: item.fileID, baseVersion: snapshot.base?.version ?? 0, change: .put(snapshot.state),
                    device: fileSystem.deviceIdentity)
                if try resolve(
                    try commit(request), for: item, request: request, snapshot: snapshot, context: &context)
                {
                    return
                }
            }
        }
        throw .local("the entry kept conflicting with the container; will try again")
    }

    /// Acts on a commit's outcome. Returns true when the item is finished (or handed back to
    /// the queue), false to try again at once on the updated base. The decision itself is
    /// `ConflictDecision.decide`; this carries it out.
    private func resolve(
        _ outcome: CommitOutcome, for item: OutboxItem, request: CommitRequest, snapshot: UploadSnapshot?,
        context: inout ResolveContext
    ) throws(SyncFailure) -> Bool {
        let refusal: ConflictDecision.Refusal
        var current: RemoteEntry?
        var nameHolder: RemoteEntry?
        var missingParent: (id: FileID, tombstone: RemoteEntry?)?
        switch outcome {
        case .committed(let entry):
            deleteGuard.committed(entry.version)
            uploads.uploadCommitted(item, entry: entry)
            waitsForOthers.withLock { $0[item.fileID] = nil }
            return true
        case .versionConflict(let entry):
            current = entry
            refusal = .changed(current: entry)
        case .nameTaken(let other):
            nameHolder = other
            refusal = .nameTaken(freedByQueuedChange: fileSystem.outbox.isPending(other.id))
        case .parentMissing:
            guard case .put(let state) = request.change, let parent = state.parent else {
                throw .local("the container says the parent is missing for a delete")
            }
            let remote = try remoteEntry(parent)
            missingParent = (parent, remote?.isDeleted == true ? remote : nil)
            refusal = .parentMissing(parentDeletedRemotely: remote?.isDeleted == true)
        case .directoryNotEmpty:
            // Deletes of what is in it wait in the mass-delete guard: wait with them (the
            // rounds of `waitForOthers` would end in taking the container's version).
            if deleteGuard.othersWaiting(than: item.fileID, isQueued: fileSystem.outbox.isPending) {
                fileSystem.outbox.postpone(item, by: EngineDelay.heldByGuard)
                return true
            }
            refusal = .directoryNotEmpty
        case .wouldCreateCycle:
            refusal = .wouldCreateCycle
        case .chunksMissing(let hashes):
            throw .local("the container lost \(hashes.count) chunks during the commit; uploading again")
        }
        var local = ConflictDecision.Local.delete
        if case .put(let state) = request.change { local = .put(state) }
        var situation = ConflictDecision.Situation(
            local: local, refusal: refusal, base: nil, localDevice: fileSystem.deviceIdentity,
            othersTried: context.uploadedOthers, mayNestUploads: context.mayNestUploads,
            othersQueued: fileSystem.outbox.items.contains { $0.fileID != item.fileID },
            roundsWaited: waitsForOthers.withLock { $0[item.fileID] ?? 0 })
        var ownDeletesBelow: [FileID] = []
        if refusal == .directoryNotEmpty, local == .delete, !context.uploadedOwnDeletes, context.depth < 64 {
            ownDeletesBelow = try ownQueuedDeletes(below: item.fileID)
            situation.ownDeletesBelowQueued = !ownDeletesBelow.isEmpty
        }
        if case .changed(let entry?) = refusal, case .put = local, entry.device != fileSystem.deviceIdentity {
            let baseManifest = snapshot?.base.map(\.manifest)
            do {
                situation.base = try uploads.baseState(of: item.fileID).map { state in
                    var state = state
                    state.manifest = baseManifest ?? []
                    return state
                }
            } catch {
                throw .local("cannot read the base of \(item.fileID) from the state database: \(error)")
            }
            situation.baseManifest = baseManifest
        }
        switch ConflictDecision.decide(situation) {
        case .finished:
            if let current {
                uploads.uploadCommitted(item, entry: current)
            } else {
                uploads.uploadUnneeded(item)
            }
            return true
        case .commitOnTop:
            uploads.rebase(item.fileID, onto: current)
            return false
        case .adopt(let merged):
            guard let current else { return false }
            var oursManifest: [ChunkRef]?
            if case .put(let ours) = local { oursManifest = ours.manifest }
            return try adopt(merged, for: item, current: current, local: nil, oursManifest: oursManifest)
        case .mergeContent(let merged):
            guard let current, case .put(let ours) = local else { return false }
            return try mergeContent(
                item: item, ours: ours, merged: merged, current: current, baseManifest: snapshot?.base?.manifest)
        case .takeRemote:
            waitsForOthers.withLock { $0[item.fileID] = nil }
            var entry = current
            if entry == nil { entry = try remoteEntry(item.fileID) }
            guard let entry else {
                uploads.uploadUnneeded(item)
                return true
            }
            try takeRemote(entry, item: item)
            return true
        case .renameAside:
            logger.notice(
                "the name of \(logName(item.fileID)) is taken by \(nameHolder?.id.hex ?? "another entry") in the container; keeping both"
            )
            uploads.renameAside(item.fileID, holder: nameHolder?.id, unlessChangedSince: item)
            fileSystem.outbox.postpone(item, by: .zero)
            return true
        case .letNameHolderGoFirst:
            guard let other = nameHolder else { return false }
            // The name is freed by a delete the mass-delete guard holds: wait with it.
            if deleteGuard.isWaiting(other.id) {
                fileSystem.outbox.postpone(item, by: EngineDelay.heldByGuard)
                return true
            }
            // Our own queued change to the other entry frees the name (names swapped or rotated
            // locally): park this entry under a temporary name (once), let that change go first,
            // then take the name.
            if !context.parked, case .put(var parked) = request.change {
                context.parked = true
                parked.name = ParkingName.of(item.fileID)
                let parkRequest = CommitRequest(
                    id: item.fileID, baseVersion: request.baseVersion, change: .put(parked), device: request.device)
                if case .committed(let entry) = try commit(parkRequest) {
                    uploads.recordIntermediateCommit(entry)
                }
            }
            guard let otherItem = fileSystem.outbox.take(other.id) else {
                // The other change is being uploaded further up this call chain: come back after it.
                fileSystem.outbox.postpone(item, by: EngineDelay.otherUploadUnderway)
                return true
            }
            upload(otherItem, depth: context.depth + 1)
            return false
        case .recreateParent:
            if let missingParent {
                // The parent was deleted remotely while we added to it: it comes back.
                uploads.rebase(missingParent.id, onto: missingParent.tombstone)
                uploads.requeue(missingParent.id)
            }
            throw .local("the parent directory was deleted in the container; re-creating it first")
        case .waitForParent:
            if let missingParent { uploads.requeue(missingParent.id) }
            throw .local("the parent directory is not in the container yet")
        case .uploadOwnDeletesFirst:
            context.uploadedOwnDeletes = true
            for id in ownDeletesBelow {
                if let taken = fileSystem.outbox.take(id) { upload(taken, depth: context.depth + 1) }
            }
            return false
        case .uploadOthersFirst:
            // Perhaps our own queued changes (entries moved out of the directory, the other half
            // of a move) must go first: upload them, then try again.
            context.uploadedOthers = true
            uploadOthers(except: item.fileID, depth: context.depth + 1)
            return false
        case .retryOnItsOwn:
            // Back to the queue, ready at once: tried again from the top, where what must go
            // first can be uploaded first. Not a failure.
            fileSystem.outbox.postpone(item, by: .zero)
            return true
        case .waitForOthers:
            waitsForOthers.withLock { $0[item.fileID, default: 0] += 1 }
            // Other local changes are still queued (a file still open, say) and may be what the
            // container waits for: try again after them, never give up our change yet.
            fileSystem.outbox.postpone(item, by: EngineDelay.waitingForOthers)
            return true
        }
    }

    /// This mount's queued deletes of what the container still holds below `folder`
    /// (`UploadRecords.ownDeletesQueuedByFolder`, followed down through the folders among them),
    /// deepest first, so each folder's delete finds it empty: one read of the queue per refused
    /// removal, uploaded in one pass (no recursion per level, so a chain of any depth stays
    /// deleted). An entry met twice (a hostile container's cycle of parents) is listed once
    /// (`OwnDeletesOrder`); an item in flight up the call chain is not taken again when uploaded.
    private func ownQueuedDeletes(below folder: FileID) throws(SyncFailure) -> [FileID] {
        let index: [FileID: [FileID]]
        do {
            index = try uploads.ownDeletesQueuedByFolder()
        } catch {
            throw .local("cannot read the queued deletes from the state database: \(error)")
        }
        return OwnDeletesOrder.deepestFirst(below: folder, in: index)
    }

    /// Uploads every other queued entry now, oldest first (ready or not).
    private func uploadOthers(except id: FileID, depth: Int) {
        let others = fileSystem.outbox.items.filter { $0.fileID != id }.sorted { $0.seq < $1.seq }
        for other in others {
            if let taken = fileSystem.outbox.take(other.fileID) { upload(taken, depth: depth) }
        }
    }

    /// Makes the local entry the container's version, dropping its queued change; if that cannot
    /// happen yet (the file is open for writing), the item waits and is tried again; if the entry
    /// changed locally since the item was taken, nothing is dropped and the item goes again.
    func takeRemote(_ entry: RemoteEntry, item: OutboxItem) throws(SyncFailure) {
        if try !apply(entry, force: true, giving: item) {
            fileSystem.outbox.postpone(item, by: EngineDelay.remoteNotAppliedYet)
        } else if fileSystem.outbox.isPending(item.fileID) {
            // Written again meanwhile: the newer local change is uploaded (and merged) instead.
            fileSystem.outbox.postpone(item, by: .zero)
        } else {
            // A folder deleted here that came back (something was added to it elsewhere) while
            // it was parked: it comes back under its real name.
            unparkAfterTakingRemote(entry)
        }
    }
}

/// What one upload attempt already tried while resolving commit answers.
struct ResolveContext {
    /// How many uploads this one is nested in (0: taken from the queue by the uploader).
    var depth: Int
    /// The entry was committed under a temporary name to free a name another queued change needs.
    var parked = false
    /// Every other queued change was uploaded first.
    var uploadedOthers = false
    /// This mount's queued deletes below the refused folder were uploaded first.
    var uploadedOwnDeletes = false

    init(depth: Int) { self.depth = depth }

    /// Uploads nest at most this deep to let another queued change go first (a name holder's,
    /// the other changes' before a folder delete gives way). Deeper, the change goes back to the
    /// queue instead (`ConflictDecision.Action.retryOnItsOwn`): the limit bounds the recursion,
    /// never what the change becomes. (New parents and own deletes below a folder nest up to 64
    /// deep, bounded separately.)
    static let nestingLimit = 8

    /// Whether another queued change may still be uploaded from inside this one.
    var mayNestUploads: Bool { depth < Self.nestingLimit }
}
