import Foundation
import SyncBackend
import Synchronization

/// What a `rekey` did.
public struct RekeyReport: Equatable, Sendable {
    /// The newest key epoch: every live entry re-sealed is sealed under it.
    public var epoch: KeyEpoch = 0
    /// Whether this run started that epoch (`newEpoch`).
    public var startedEpoch = false
    /// Live entries whose record was re-sealed (each a new version, committed with its ledger entry).
    public var entries = 0
    /// Chunks downloaded, opened and uploaded again under the newest epoch's keyed IDs, and their
    /// plain bytes. A chunk already stored under the newest epoch (shared with newer content, or
    /// uploaded by an interrupted run) is not counted: it is not sent again.
    public var chunks = 0
    public var bytes: Int64 = 0
    /// Live entries left as they were because another device changed them while this run was
    /// re-sealing them (its version is kept; a rerun re-seals it if it still needs it).
    public var skipped = 0
    /// Live entries still sealed under an older epoch when the run ended (the skipped ones that
    /// still need it): 0 after a run that finished the job.
    public var remaining = 0
    /// Deleted entries (in the trash) whose last record stays sealed under an older epoch, as
    /// older versions in history do, until retention prunes them.
    public var oldTombstones = 0

    public init() {}
}

/// Re-sealing on demand (`rekey`): after a member was removed, what was written before its
/// removal is still sealed under epochs it holds. `rekey` re-seals every live entry under the
/// newest epoch, so that the live tree (records and the chunks they reference) opens only with
/// keys the current members hold.
///
/// The contract:
/// - Only **live** entries are re-sealed; older versions in history and tombstones are immutable
///   on the server and stay sealed under their epochs until retention prunes them.
/// - Each batch of entries is a normal commit (`commit(allOrNothing:)`): decided by `CommitRules`
///   against the checked tree, stored with its ledger entry, decided again after a lost race. Each
///   change is based on the version re-sealed, so an entry another device changed meanwhile is
///   refused, never overwritten: it is left out of the batch and counted in `skipped`.
/// - Chunks are uploaded before the commit that references them; the ones already stored under the
///   newest epoch are not sent again. So a run that stopped part-way (a crash, a lost connection)
///   is finished by the next run, and a run with nothing left to do changes nothing.
extension SealedContainer {
    /// At most this many entries in one re-sealing commit.
    static let rekeyBatchEntries = 128
    /// At most this many chunk references in one re-sealing commit (at least one entry, however
    /// large, goes in each).
    static let rekeyBatchChunkReferences = 16_384
    /// How many times in a row a batch may be answered that its chunks are missing (the epoch moved
    /// on meanwhile, or a collector took them) before the run gives up.
    static let rekeyChunkAttempts = 4

    /// Starts a new key epoch, wrapped to every member and the recovery key, with no member
    /// removed: a fresh key for everything written (and re-sealed) from now on. Returns the epoch.
    @discardableResult
    public func startEpoch() async throws(ContainerProtocolError) -> KeyEpoch {
        try await changeKeyring { keyring, _, _ in
            let secret = EpochSecret.random()
            return (keyring.startingEpoch(secret), secret)
        }
        return try state.withLock { state throws(ContainerProtocolError) in
            guard let keyring = state.view.keyring else {
                throw ContainerProtocolError.invalidRequest("the sealed container has no keyring")
            }
            return keyring.newestEpoch
        }
    }

    /// Re-seals every live entry sealed under an older epoch than the newest, after starting a new
    /// epoch first if `newEpoch`. `progress` is told the counts after each batch.
    public func rekey(
        newEpoch: Bool, progress: @Sendable (RekeyReport) -> Void = { _ in }
    ) async throws(ContainerProtocolError) -> RekeyReport {
        var report = RekeyReport()
        if newEpoch {
            try await startEpoch()
            report.startedEpoch = true
        }
        var skipped = Set<FileID>()
        var chunkRefusals = 0
        while true {
            try await catchUp()
            let (keys, stale) = try staleEntries()
            report.epoch = keys.epoch
            let batch = Self.rekeyBatch(of: stale.filter { !skipped.contains($0.id) })
            guard !batch.isEmpty else { break }
            let (chunks, bytes) = try await resealChunks(of: batch)
            report.chunks += chunks
            report.bytes += bytes
            // The same state at the version re-sealed: the commit path seals it under the newest
            // epoch; a version changed meanwhile is refused.
            let requests = batch.map {
                CommitRequest(
                    id: $0.id, baseVersion: $0.version, change: .put($0.state),
                    device: $0.device.isEmpty ? "rekey" : $0.device)
            }
            switch try await commit(allOrNothing: requests) {
            case .committed:
                report.entries += batch.count
                chunkRefusals = 0
            case .refused(_, .chunksMissing):
                chunkRefusals += 1
                guard chunkRefusals < Self.rekeyChunkAttempts else {
                    throw .busy("the re-sealed chunks kept going missing before their commit; run rekey again")
                }
            case .refused(let index, _):
                // Another device changed (or moved) this entry since it was read: its version
                // stays, and the rest of the batch is tried again without it.
                skipped.insert(batch[index].id)
                report.skipped += 1
            }
            progress(report)
        }
        let (_, stale) = try staleEntries()
        report.remaining = stale.count
        report.oldTombstones = try oldTombstoneCount()
        return report
    }

    /// The newest epoch's keys, and the live entries whose record is sealed under an older epoch
    /// (in the order of their IDs).
    private func staleEntries() throws(ContainerProtocolError) -> (EpochKeys, [RemoteEntry]) {
        try state.withLock { state throws(ContainerProtocolError) in
            guard let newest = state.view.keyring?.newestEpoch, let keys = state.keys[newest] else {
                throw ContainerProtocolError.invalidRequest("this device holds no key of the newest epoch")
            }
            var stale: [RemoteEntry] = []
            for (id, entry) in state.tree.entries where !entry.isDeleted {
                if try Self.recordEpoch(of: id, in: state.view.vouched) < newest { stale.append(entry) }
            }
            return (keys, stale.sorted { $0.id.hex < $1.id.hex })
        }
    }

    /// How many deleted entries keep a record sealed under an older epoch than the newest.
    private func oldTombstoneCount() throws(ContainerProtocolError) -> Int {
        try state.withLock { state throws(ContainerProtocolError) in
            guard let newest = state.view.keyring?.newestEpoch else { return 0 }
            var count = 0
            for (id, entry) in state.tree.entries where entry.isDeleted {
                if try Self.recordEpoch(of: id, in: state.view.vouched) < newest { count += 1 }
            }
            return count
        }
    }

    /// The epoch the vouched record of `id` is sealed under.
    private static func recordEpoch(of id: FileID, in vouched: [FileID: VouchedEntry]) throws(ContainerProtocolError)
        -> KeyEpoch
    {
        guard let vouched = vouched[id] else {
            throw .storageFailure("entry \(id) is in the tree but no ledger entry vouches for it")
        }
        do {
            return try SealedRecord.epoch(of: vouched.sealed)
        } catch {
            throw .storageFailure("entry \(id)'s record: \(error)")
        }
    }

    /// The first entries of `stale` by the first one's author that make one commit of a sensible
    /// size.
    static func rekeyBatch(of stale: [RemoteEntry]) -> [RemoteEntry] {
        var batch: [RemoteEntry] = []
        var references = 0
        // One author per batch: the ledger entry signs one device name for all its changes, and
        // each re-sealed entry keeps its author.
        for entry in stale where entry.device == stale.first?.device {
            let count = entry.state.manifest.count
            if !batch.isEmpty
                && (batch.count == rekeyBatchEntries || references + count > rekeyBatchChunkReferences)
            {
                break
            }
            batch.append(entry)
            references += count
        }
        return batch
    }

    /// Makes sure every chunk `entries` reference is stored under the newest epoch's IDs: each one
    /// missing there is read (opened under the epoch it is stored under) and uploaded sealed under
    /// the newest epoch. Returns how many were uploaded, and their plain bytes.
    private func resealChunks(of entries: [RemoteEntry]) async throws(ContainerProtocolError) -> (Int, Int64) {
        var seen = Set<ChunkHash>()
        let hashes = entries.flatMap(\.state.manifest).map(\.hash).filter { seen.insert($0).inserted }
        var missing: [ChunkHash] = []
        for start in stride(from: 0, to: hashes.count, by: CommitBatch.maximumChunks) {
            missing += try await missingChunks(
                Array(hashes[start..<min(start + CommitBatch.maximumChunks, hashes.count)]))
        }
        return (missing.count, try await sealAgain(missing))
    }
}
