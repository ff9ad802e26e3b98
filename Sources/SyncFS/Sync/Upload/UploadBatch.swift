import Glibc
import SyncBackend

/// Changes prepared to go to the container together: their commit requests in the order taken,
/// and the encoded chunks of their content (held in memory, so bounded).
struct UploadBatch {
    /// Changes taken at once (`Uploader.runUploads`); within `CommitBatch.maximumChanges`.
    static let maximumChanges = 512
    /// Content bytes of one batch; a file that does not fit goes alone (read as it is sent).
    static let maximumContentBytes: Int64 = 8 << 20

    /// One change of the batch.
    struct Change {
        var item: OutboxItem
        var request: CommitRequest
        /// Its content's bytes and chunks, when the change carries content.
        var content: (bytes: Int64, chunks: Int)?
    }

    private(set) var changes: [Change] = []
    private(set) var chunks: [EncodedChunk] = []
    private(set) var contentBytes: Int64 = 0
    private(set) var chunkRefs = 0
    /// The entries the batch puts (a new folder its children may follow).
    private var putIDs: Set<FileID> = []

    var isEmpty: Bool { changes.isEmpty }

    /// Whether `id` is put by a change already in the batch (a new folder its children may follow).
    func puts(_ id: FileID) -> Bool { putIDs.contains(id) }

    /// Chunk references the batch's puts carry in all (metadata-only puts of large files
    /// included): bounds the batch's request and answer (`CommitBatch.checkAnswer`).
    static let maximumChunkRefs = 65_536

    /// Whether `length` more content bytes and `refs` more chunk references fit.
    func hasRoom(for length: Int64, refs: Int = 0) -> Bool {
        contentBytes + length <= Self.maximumContentBytes && chunkRefs + refs <= Self.maximumChunkRefs
    }

    mutating func add(_ item: OutboxItem, _ request: CommitRequest, chunks content: [EncodedChunk]? = nil) {
        let bytes = content.map { $0.reduce(0) { $0 + Int64($1.plainLength) } }
        changes.append(Change(item: item, request: request, content: bytes.map { ($0, content?.count ?? 0) }))
        let content = content ?? []
        if case .put(let state) = request.change {
            putIDs.insert(request.id)
            chunkRefs += state.manifest.count
        }
        chunks += content
        contentBytes += content.reduce(0) { $0 + Int64($1.plainLength) }
    }
}

/// Several ready changes sent together: each is prepared exactly as one round prepares it
/// (`look`, the guard, `admitsContent`), their missing chunks go in as few calls as the limits
/// allow, and one `commit(batch:)` commits them. What it commits is recorded in one transaction;
/// everything else — a refusal of any kind, a change that cannot go with the others (its parent
/// is not in the container or before it in the batch, its content does not fit, it leaves the
/// synced set), a batch the container will not take — goes through `upload(_:)` afterwards, in
/// the order taken, so a refusal is resolved exactly as a lone change's.
extension Uploader {
    /// Uploads `items` (taken oldest first, all in flight) as one batch where it can.
    func uploadTogether(_ items: [OutboxItem]) {
        var batch = UploadBatch()
        var alone: Set<FileID> = []
        let encoder = ChunkEncoder(level: transfer.compressionLevel)
        for (index, item) in items.enumerated() {
            if !mayGoOn {
                // The guard tripped on a change before it, or the engine stops or pauses: the
                // rest wait in the queue.
                for rest in items[index...] { outbox.postpone(rest, by: .zero) }
                break
            }
            do throws(SyncFailure) {
                if try !prepare(item, into: &batch, encoder: encoder) { alone.insert(item.fileID) }
            } catch {
                failed(item, error)
                uploads.uploadReturned(item)
            }
        }
        if !batch.isEmpty { alone.formUnion(commit(batch)) }
        uploadAlone(items.filter { alone.contains($0.fileID) })
    }

    /// Prepares `item` as a round does and adds it to `batch`; false if it must go alone. A
    /// change that needs no commit now (held, not needed, busy, postponed, waiting for the
    /// guard) is settled here and counts as prepared.
    private func prepare(_ item: OutboxItem, into batch: inout UploadBatch, encoder: ChunkEncoder)
        throws(SyncFailure) -> Bool
    {
        switch look(at: item) {
        case .settled:
            settled(item)
        case .leavesSyncedSet:
            return false
        case .delete(let base):
            if admitsDelete(item, base: base) {
                batch.add(item, deleteRequest(item, base: base))
            } else {
                settled(item)
            }
        case .put(let snapshot):
            defer { if let content = snapshot.content { close(content.descriptor) } }
            if let parent = snapshot.uncommittedParent, !batch.puts(parent) { return false }
            return try add(item, snapshot, to: &batch, encoder: encoder)
        }
        return true
    }

    /// Adds the put of `item` to `batch`, its content read and encoded; false if the content does
    /// not fit. The caller closes the snapshot's descriptor.
    private func add(_ item: OutboxItem, _ prepared: UploadSnapshot, to batch: inout UploadBatch, encoder: ChunkEncoder)
        throws(SyncFailure) -> Bool
    {
        guard let content = prepared.content else {
            guard batch.hasRoom(for: 0, refs: prepared.state.manifest.count) else { return false }
            batch.add(item, putRequest(item, prepared))
            return true
        }
        guard batch.hasRoom(for: content.length, refs: Int(content.length / 4096) + 1) else { return false }
        var snapshot = prepared
        let chunks = try encodeContent(item, content, encoder: encoder)
        snapshot.state.manifest = chunks.map { ChunkRef(hash: $0.hash, length: Int64($0.plainLength)) }
        if admitsContent(item, snapshot, content) {
            batch.add(item, putRequest(item, snapshot), chunks: chunks)
        } else {
            settled(item)
        }
        return true
    }

    /// Reads and encodes the content of `item` (the transfer board shows it meanwhile).
    private func encodeContent(_ item: OutboxItem, _ content: ContentSnapshot, encoder: ChunkEncoder)
        throws(SyncFailure) -> [EncodedChunk]
    {
        transfers.started(item.fileID, direction: .upload, total: content.length)
        defer { transfers.ended(item.fileID) }
        return try transfer.encode(descriptor: content.descriptor, length: content.length, with: encoder)
    }

    /// Sends the batch's missing chunks and commits it; records what was committed. Returns the
    /// changes that must go alone: those refused, or all of them if the container would not
    /// take the batch as asked (`invalidRequest`: nothing was stored). A failure that is not
    /// the batch's (the container away, a storage failure) fails each change as a round does.
    private func commit(_ batch: UploadBatch) -> Set<FileID> {
        var totals = ContentTransfer.Totals()
        defer { progress.add(totals) }
        let started = outbox.now
        let outcomes: [CommitOutcome]
        do throws(SyncFailure) {
            try transfer.send(batch.chunks, totals: &totals)
            outcomes = try container.commit(batch: batch.changes.map(\.request))
        } catch .container(.invalidRequest(let reason)) {
            logger.debug("a batch of \(batch.changes.count) changes refused (\(reason)); each goes alone")
            return Set(batch.changes.map(\.item.fileID))
        } catch {
            for change in batch.changes {
                failed(change.item, error)
                uploads.uploadReturned(change.item)
            }
            return []
        }
        log.logUploadBatch(
            changes: batch.changes.count, bytes: batch.contentBytes, sent: totals.chunksUploaded,
            sentBytes: totals.encodedBytesUploaded, started: started)
        var committed: [(item: OutboxItem, entry: RemoteEntry)] = []
        var refused: Set<FileID> = []
        for (change, outcome) in zip(batch.changes, outcomes) {
            if case .committed(let entry) = outcome {
                committed.append((change.item, entry))
                if let content = change.content {
                    log.logUploadInBatch(
                        change.item.fileID, bytes: content.bytes, chunks: content.chunks, batch: batch.changes.count)
                }
            } else {
                refused.insert(change.item.fileID)
            }
        }
        recordCommitted(committed)
        for commit in committed { settled(commit.item) }
        return refused
    }

    /// The change of `item` ended for now without a frame of its own (committed in the batch,
    /// or settled): what a frame's end does.
    private func settled(_ item: OutboxItem) {
        finished(item)
        uploads.uploadReturned(item)
    }

    /// False once the engine stops or pauses or the guard holds: what a batch has not started
    /// stays queued.
    private var mayGoOn: Bool { run.isRunning && !pause.holds(.sync) && !deleteGuard.isHeld }

    /// Uploads `items` one by one, in order, each through its own frames. They go back to the
    /// queue first, so one of them that another asks to go first (a name's holder, a new
    /// parent) can be taken by that upload; one taken so is not uploaded again.
    private func uploadAlone(_ items: [OutboxItem]) {
        for item in items {
            outbox.postpone(item, by: .zero)
            uploads.uploadReturned(item)
        }
        for item in items {
            // Stopping or pausing: the rest stay queued (a stop must not wait for them all). The
            // guard tripped (on a change of this batch): they stay queued too, held, so nothing
            // is committed while held and `discard` finds them in the queue.
            guard mayGoOn else { return }
            guard let taken = outbox.take(item.fileID) else { continue }
            upload(taken)
        }
    }
}
