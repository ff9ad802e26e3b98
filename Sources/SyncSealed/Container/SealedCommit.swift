import SyncBackend

/// One change of a sealed commit, planned by the wrapper after the tree's rules held.
struct PlannedChange: Sendable {
    enum Kind: Sendable {
        /// The entry's new state, to be sealed.
        case put(EntryState)
        /// A delete: the tombstone keeps the stored record, whose digest the ledger names.
        case delete(storedSealed: [UInt8])
    }

    var id: FileID
    var baseVersion: EntryVersion
    var kind: Kind
}

/// Makes the requests of one sealed commit, for `Container.commit(allOrNothing:)`: a stored
/// record per change (`OpaqueEntry`), the keyring if the commit publishes one, and the ledger
/// entry last, created at the next sequence's place (base version 0: the compare-and-swap that
/// serializes commits).
struct SealedCommit {
    var sequence: UInt64
    var previous: [UInt8]
    var keys: EpochKeys
    var device: String
    var signer: DeviceKeys
    var time: Int64

    /// The requests, and the ledger entry they end with.
    func requests(for changes: [PlannedChange], publishing keyring: Keyring? = nil) -> (
        [CommitRequest], LedgerEntry
    ) {
        var requests: [CommitRequest] = []
        var named: [LedgerChange] = []
        for change in changes {
            switch change.kind {
            case .put(let state):
                let sealed = SealedRecord.seal(state, of: change.id, keys: keys)
                let chunks = OpaqueEntry.serverManifest(of: state, keys: keys)
                requests.append(
                    CommitRequest(
                        id: change.id, baseVersion: change.baseVersion,
                        change: .put(OpaqueEntry.state(of: change.id, sealed: sealed, chunks: chunks)), device: device))
                named.append(LedgerChange(id: change.id, digest: SealedRecord.digest(sealed), deleted: false))
            case .delete(let storedSealed):
                requests.append(
                    CommitRequest(id: change.id, baseVersion: change.baseVersion, change: .delete, device: device))
                named.append(LedgerChange(id: change.id, digest: SealedRecord.digest(storedSealed), deleted: true))
            }
        }
        if let keyring {
            let id = Keyring.fileID(publishedIn: sequence)
            let bytes = keyring.encoded
            requests.append(
                CommitRequest(
                    id: id, baseVersion: 0, change: .put(OpaqueEntry.state(of: id, sealed: bytes, chunks: [])),
                    device: device))
            named.append(LedgerChange(id: id, digest: SealedRecord.digest(bytes), deleted: false))
        }
        let entry = LedgerEntry(
            container: keys.container, sequence: sequence, previous: previous, epoch: keys.epoch, time: time,
            device: device, changes: named, signedBy: signer)
        let ledgerID = LedgerEntry.fileID(of: sequence)
        requests.append(
            CommitRequest(
                id: ledgerID, baseVersion: 0,
                change: .put(OpaqueEntry.state(of: ledgerID, sealed: entry.encoded, chunks: [])),
                device: device))
        return (requests, entry)
    }
}

extension SealedChunkCodec {
    /// The size class of a sealed chunk of `plainLength` bytes stored raw: what a stored record's
    /// manifest tells the server of each chunk (its padded plain size; the stored object may be
    /// smaller, when zlib shrank it).
    static func storedBound(plainLength: Int) -> Int {
        SealedPadding.bucket(SealedEnvelope.overhead + innerHeader + plainLength)
    }
}
