import SyncBackend

/// The container's answer to a commit, carried out. The decision is `ConflictDecision.decide`
/// (pure, tested case by case); each of its actions is one small method here returning the
/// upload's next step.
extension Uploader {
    /// Records commits the container accepted (each item with its committed entry), in one
    /// transaction however many: the new bases, the outbox rows dropped, the guard and the
    /// sync rounds told.
    func recordCommitted(_ commits: [(item: OutboxItem, entry: RemoteEntry)]) {
        for commit in commits { deleteGuard.committed(commit.entry.version) }
        uploads.uploadsCommitted(commits)
        waitsForOthers.withLock { waits in
            for commit in commits { waits[commit.item.fileID] = nil }
        }
        for _ in commits { rounds.sent() }
    }

    /// What the refusal of a commit names, besides the refusal itself.
    private struct Refused {
        var refusal: ConflictDecision.Refusal
        /// The container's version of the entry, when it answered with one.
        var current: RemoteEntry?
        /// The entry holding the name (`nameTaken`).
        var nameHolder: RemoteEntry?
        /// The parent the container lacks, and its tombstone if it was deleted (`parentMissing`).
        var missingParent: (id: FileID, tombstone: RemoteEntry?)?
    }

    /// Acts on a commit's outcome: a refusal is decided (`ConflictDecision.decide`) and the
    /// decision carried out.
    func resolve(
        _ outcome: CommitOutcome, for item: OutboxItem, request: CommitRequest, snapshot: UploadSnapshot?,
        context: inout ResolveContext
    ) throws(SyncFailure) -> UploadStep {
        if case .committed(let entry) = outcome {
            recordCommitted([(item, entry)])
            return .done
        }
        // Deletes of what is in it wait in the mass-delete guard: wait with them (the rounds of
        // `waitForOthers` would end in taking the container's version).
        if case .directoryNotEmpty = outcome, deleteGuard.othersWaiting(than: item.fileID, isQueued: outbox.isPending) {
            outbox.postpone(item, by: EngineDelay.heldByGuard)
            return .done
        }
        let refused = try refusal(outcome, of: request)
        var local = ConflictDecision.Local.delete
        if case .put(let state) = request.change { local = .put(state) }
        var situation = ConflictDecision.Situation(
            local: local, refusal: refused.refusal, base: nil, localDevice: deviceIdentity,
            othersTried: context.uploadedOthers, mayNestUploads: context.mayNestUploads,
            othersQueued: outbox.items.contains { $0.fileID != item.fileID },
            roundsWaited: waitsForOthers.withLock { $0[item.fileID] ?? 0 })
        var ownDeletesBelow: [FileID] = []
        if refused.refusal == .directoryNotEmpty, local == .delete, !context.uploadedOwnDeletes, context.depth < 64 {
            ownDeletesBelow = try ownQueuedDeletes(below: item.fileID)
            situation.ownDeletesBelowQueued = !ownDeletesBelow.isEmpty
        }
        if case .changed(let entry?) = refused.refusal, case .put = local, entry.device != deviceIdentity {
            let baseManifest = snapshot?.base.map(\.manifest)
            situation.base = try baseState(of: item.fileID, manifest: baseManifest)
            situation.baseManifest = baseManifest
        }
        return try carryOut(
            ConflictDecision.decide(situation), for: item, request: request, snapshot: snapshot, refused: refused,
            ownDeletesBelow: ownDeletesBelow, context: &context)
    }

    /// What the container's refusal `outcome` of `request` names.
    private func refusal(_ outcome: CommitOutcome, of request: CommitRequest) throws(SyncFailure) -> Refused {
        switch outcome {
        case .committed:
            preconditionFailure("a commit is not a refusal")
        case .versionConflict(let entry):
            return Refused(refusal: .changed(current: entry), current: entry)
        case .nameTaken(let other):
            return Refused(refusal: .nameTaken(freedByQueuedChange: outbox.isPending(other.id)), nameHolder: other)
        case .parentMissing:
            guard case .put(let state) = request.change, let parent = state.parent else {
                throw .local("the container says the parent is missing for a delete")
            }
            let remote = try container.entry(parent)
            let deleted = remote?.isDeleted == true
            return Refused(
                refusal: .parentMissing(parentDeletedRemotely: deleted), missingParent: (parent, deleted ? remote : nil)
            )
        case .directoryNotEmpty:
            return Refused(refusal: .directoryNotEmpty)
        case .wouldCreateCycle:
            return Refused(refusal: .wouldCreateCycle)
        case .chunksMissing(let hashes):
            throw .local("the container lost \(hashes.count) chunks during the commit; uploading again")
        }
    }

    /// Carries out the decision `action` on the refused commit of `item`.
    private func carryOut(
        _ action: ConflictDecision.Action, for item: OutboxItem, request: CommitRequest, snapshot: UploadSnapshot?,
        refused: Refused, ownDeletesBelow: [FileID], context: inout ResolveContext
    ) throws(SyncFailure) -> UploadStep {
        var local = ConflictDecision.Local.delete
        if case .put(let state) = request.change { local = .put(state) }
        switch action {
        case .finished:
            return alreadyCommitted(item, current: refused.current)
        case .commitOnTop:
            uploads.rebase(item.fileID, onto: refused.current)
            return .again
        case .adopt(let merged):
            guard let current = refused.current else { return .again }
            var oursManifest: [ChunkRef]?
            if case .put(let ours) = local { oursManifest = ours.manifest }
            return try merger.adopt(merged, for: item, current: current, local: nil, oursManifest: oursManifest)
        case .mergeContent(let merged):
            guard let current = refused.current, case .put(let ours) = local else { return .again }
            // A conflict copy made by the merge names the container's version in its event.
            return try conflicts.whileContesting(item.fileID, with: current) { () throws(SyncFailure) in
                try merger.mergeContent(
                    item: item, ours: ours, merged: merged, current: current, baseManifest: snapshot?.base?.manifest)
            }
        case .takeRemote:
            return try takeRemote(item, current: refused.current)
        case .renameAside:
            return renameAside(item, holder: refused.nameHolder)
        case .letNameHolderGoFirst:
            guard let holder = refused.nameHolder else { return .again }
            return try letNameHolderGoFirst(holder, item: item, request: request, context: &context)
        case .recreateParent:
            return recreateParent(refused.missingParent)
        case .waitForParent:
            if let missing = refused.missingParent { uploads.requeue(missing.id) }
            return .later("the parent directory is not in the container yet")
        case .uploadOwnDeletesFirst:
            context.uploadedOwnDeletes = true
            return .first(ownDeletesBelow.map { .queued($0) })
        case .uploadOthersFirst:
            // Perhaps our own queued changes (entries moved out of the directory, the other half
            // of a move) must go first: upload them all, oldest first, then try again.
            context.uploadedOthers = true
            let others = outbox.items.filter { $0.fileID != item.fileID }.sorted { $0.seq < $1.seq }
            return .first(others.map { .queued($0.fileID) })
        case .retryOnItsOwn:
            // Back to the queue, ready at once: tried again from the top, where what must go
            // first can be uploaded first. Not a failure.
            outbox.postpone(item, by: .zero)
            return .done
        case .waitForOthers:
            waitsForOthers.withLock { $0[item.fileID, default: 0] += 1 }
            // Other local changes are still queued (a file still open, say) and may be what the
            // container waits for: try again after them, never give up our change yet.
            outbox.postpone(item, by: EngineDelay.waitingForOthers)
            return .done
        }
    }

    /// The sync base of `id` (what both sides started from) with its content `manifest`.
    private func baseState(of id: FileID, manifest: [ChunkRef]?) throws(SyncFailure) -> EntryState? {
        do {
            return try uploads.baseState(of: id).map { state in
                var state = state
                state.manifest = manifest ?? []
                return state
            }
        } catch {
            throw .local("cannot read the base of \(id) from the state database: \(error)")
        }
    }

    /// The container already holds our change (our own commit whose answer was lost).
    private func alreadyCommitted(_ item: OutboxItem, current: RemoteEntry?) -> UploadStep {
        if let current {
            uploads.uploadCommitted(item, entry: current)
        } else {
            uploads.uploadUnneeded(item)
        }
        return .done
    }

    /// The local change gives way: the container's version is applied here.
    private func takeRemote(_ item: OutboxItem, current: RemoteEntry?) throws(SyncFailure) -> UploadStep {
        waitsForOthers.withLock { $0[item.fileID] = nil }
        var entry = current
        if entry == nil { entry = try container.entry(item.fileID) }
        guard let entry else {
            uploads.uploadUnneeded(item)
            return .done
        }
        try remoteWins.take(entry, replacing: item)
        return .done
    }

    /// Keep both: our entry takes a conflict name and is uploaded under it.
    private func renameAside(_ item: OutboxItem, holder: RemoteEntry?) -> UploadStep {
        logger.notice(
            "the name of \(log.logName(item.fileID)) is taken by \(holder?.id.hex ?? "another entry") in the container; keeping both"
        )
        uploads.renameAside(item.fileID, holder: holder?.id, unlessChangedSince: item)
        outbox.postpone(item, by: .zero)
        return .done
    }

    /// Our own queued change to the entry holding the name frees it (names swapped or rotated
    /// locally): this entry is parked under a temporary name (once), that change goes first,
    /// then this one takes the name.
    private func letNameHolderGoFirst(
        _ holder: RemoteEntry, item: OutboxItem, request: CommitRequest, context: inout ResolveContext
    ) throws(SyncFailure) -> UploadStep {
        // The name is freed by a delete the mass-delete guard holds: wait with it.
        if deleteGuard.isWaiting(holder.id) {
            outbox.postpone(item, by: EngineDelay.heldByGuard)
            return .done
        }
        if !context.parked, case .put(var parked) = request.change {
            context.parked = true
            parked.name = ParkingName.of(item.fileID)
            let parkRequest = CommitRequest(
                id: item.fileID, baseVersion: request.baseVersion, change: .put(parked), device: request.device)
            if case .committed(let entry) = try container.commit(parkRequest) {
                uploads.recordIntermediateCommit(entry)
            }
        }
        guard let holderItem = outbox.take(holder.id) else {
            // The other change is being uploaded further down this upload's stack: come back
            // after it.
            outbox.postpone(item, by: EngineDelay.otherUploadUnderway)
            return .done
        }
        return .first([.taken(holderItem)])
    }

    /// The parent was deleted remotely while we added to it: it comes back (re-created first).
    private func recreateParent(_ missing: (id: FileID, tombstone: RemoteEntry?)?) -> UploadStep {
        if let missing {
            uploads.rebase(missing.id, onto: missing.tombstone)
            uploads.requeue(missing.id)
        }
        return .later("the parent directory was deleted in the container; re-creating it first")
    }

    /// This mount's queued deletes of what the container still holds below `folder`
    /// (`UploadRecords.ownDeletesQueuedByFolder`, followed down through the folders among them),
    /// deepest first, so each folder's delete finds it empty: one read of the queue per refused
    /// removal, uploaded in one pass, so a chain of any depth stays deleted. An entry met twice (a
    /// hostile container's cycle of parents) is listed once (`OwnDeletesOrder`); an item in flight
    /// on the upload's stack is not taken again.
    private func ownQueuedDeletes(below folder: FileID) throws(SyncFailure) -> [FileID] {
        let index: [FileID: [FileID]]
        do {
            index = try uploads.ownDeletesQueuedByFolder()
        } catch {
            throw .local("cannot read the queued deletes from the state database: \(error)")
        }
        return OwnDeletesOrder.deepestFirst(below: folder, in: index)
    }
}

/// What one upload already tried while resolving commit answers.
struct ResolveContext {
    /// How many uploads this one is nested in (0: taken from the queue by the uploader).
    var depth: Int
    /// The entry was committed under a temporary name to free a name another queued change needs.
    var parked = false
    /// Every other queued change was uploaded first.
    var uploadedOthers = false
    /// This mount's queued deletes below the refused folder were uploaded first.
    var uploadedOwnDeletes = false
    /// Its parent, not in the container yet, was uploaded first.
    var parentTried = false

    init(depth: Int) { self.depth = depth }

    /// Uploads nest at most this deep to let another queued change go first (a name holder's,
    /// the other changes' before a folder delete gives way). Deeper, the change goes back to the
    /// queue instead (`ConflictDecision.Action.retryOnItsOwn`): the limit bounds the stack,
    /// never what the change becomes. (New parents and own deletes below a folder nest up to 64
    /// deep, bounded separately.)
    static let nestingLimit = 8

    /// Whether another queued change may still be uploaded from inside this one.
    var mayNestUploads: Bool { depth < Self.nestingLimit }
}
