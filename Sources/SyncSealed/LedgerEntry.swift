import Crypto
import SyncBackend

/// One entry a commit made or changed, as its ledger entry names it.
public struct LedgerChange: Equatable, Sendable {
    public var id: FileID
    /// `SealedRecord.digest` of the record committed (a delete names the tombstone's record).
    public var digest: [UInt8]
    public var deleted: Bool

    public init(id: FileID, digest: [UInt8], deleted: Bool) {
        self.id = id
        self.digest = digest
        self.deleted = deleted
    }
}

/// The ledger: one signed entry per commit to a sealed container, chained by digest, numbered
/// from 1 (the genesis, which makes the keyring). A commit's ledger entry names every entry the
/// commit changed and the digest of the record it stored for each; the device that made the commit
/// signs it with its Ed25519 key. A reader that holds entries 1...n has checked every record the
/// container holds as of commit n, who made each change, and in which order.
///
/// Encoded: `version (1) ‖ container (16) ‖ sequence (8) ‖ previous digest (32; zeros for the
/// genesis) ‖ epoch (4) ‖ signer's Ed25519 key (32) ‖ time in ms (8) ‖ device (counted, UTF-8,
/// at most 256 bytes) ‖ change count (4) ‖
/// (file ID (16) ‖ record digest (32) ‖ deleted (1)) per change ‖ Ed25519 signature (64)` over
/// the label `syncfs-sealed-v1 ledger` and everything before the signature.
public struct LedgerEntry: Equatable, Sendable {
    public let container: SealedContainerID
    public let sequence: UInt64
    public let previous: [UInt8]
    /// The newest key epoch once this commit is applied.
    public let epoch: KeyEpoch
    /// The Ed25519 key of the device that made the commit.
    public let signer: [UInt8]
    /// When, by the signer's clock (milliseconds since 1970): shown, never trusted for order.
    public let time: Int64
    /// The device name the commit's requests carry (`CommitRequest.device`): what the engine sees
    /// as the changes' author, signed here so a server cannot make one device's change pass for
    /// another's. Cut to `RemoteEntryValidation.maxDeviceLength` bytes of whole characters.
    public let device: String
    public let changes: [LedgerChange]
    public private(set) var signature: [UInt8]

    /// Most changes one ledger entry names (a commit holds its records and its ledger entry).
    public static let maximumChanges = CommitBatch.maximumChanges - 1

    public static let genesisPrevious = [UInt8](repeating: 0, count: 32)

    /// Signs a new entry with `keys`.
    public init(
        container: SealedContainerID, sequence: UInt64, previous: [UInt8], epoch: KeyEpoch, time: Int64,
        device: String, changes: [LedgerChange], signedBy keys: DeviceKeys
    ) {
        precondition(sequence >= 1 && previous.count == 32 && changes.count <= Self.maximumChanges)
        self.container = container
        self.sequence = sequence
        self.previous = previous
        self.epoch = epoch
        self.signer = keys.identity.signing
        self.time = time
        self.device = SealedText.cut(device, toBytes: RemoteEntryValidation.maxDeviceLength)
        self.changes = changes
        self.signature = []
        self.signature = keys.sign(signedMessage)
    }

    private var body: [UInt8] {
        var out = SealedWriter(capacity: 120 + 49 * changes.count)
        out.byte(SealedFormat.version)
        out.fixed(container.bytes)
        out.uint64(sequence)
        out.fixed(previous)
        out.uint32(epoch)
        out.fixed(signer)
        out.int64(time)
        out.counted(Array(device.utf8))
        out.uint32(UInt32(changes.count))
        for change in changes {
            out.fileID(change.id)
            out.fixed(change.digest)
            out.byte(change.deleted ? 1 : 0)
        }
        return out.bytes
    }

    private var signedMessage: [UInt8] {
        var message = SealedWriter()
        message.counted(SealedFormat.label("ledger"))
        message.fixed(body)
        return message.bytes
    }

    public var encoded: [UInt8] { body + signature }

    /// What the next entry names as `previous`.
    public var digest: [UInt8] {
        var input = SealedWriter()
        input.counted(SealedFormat.label("ledger-digest"))
        input.fixed(encoded)
        return Array(SHA256.hash(data: input.bytes))
    }

    /// Reads an encoded entry. Its signature is not checked here (`isSigned(by:)`): who may sign
    /// depends on the keyring as of the entry before.
    public init(encoded: [UInt8]) throws(SealedError) {
        var reader = SealedReader(encoded)
        guard let version = reader.byte() else { throw .malformed("an empty ledger entry") }
        guard version == SealedFormat.version else { throw .unsupportedVersion(version) }
        guard let containerBytes = reader.fixed(16), let container = SealedContainerID(bytes: containerBytes),
            let sequence = reader.uint64(), sequence >= 1, let previous = reader.fixed(32), let epoch = reader.uint32(),
            let signer = reader.fixed(32), let time = reader.int64(),
            let deviceBytes = reader.counted(limit: RemoteEntryValidation.maxDeviceLength),
            let device = String(validating: deviceBytes, as: UTF8.self), let count = reader.uint32(),
            Int(count) <= Self.maximumChanges
        else { throw .malformed("a ledger entry's header") }
        var changes: [LedgerChange] = []
        changes.reserveCapacity(Int(count))
        var seen = Set<FileID>()
        for _ in 0..<count {
            guard let id = reader.fileID(), let digest = reader.fixed(32), let deleted = reader.byte(), deleted <= 1,
                seen.insert(id).inserted
            else { throw .malformed("a ledger entry's change") }
            changes.append(LedgerChange(id: id, digest: digest, deleted: deleted == 1))
        }
        guard let signature = reader.fixed(64), reader.isAtEnd else { throw .malformed("a ledger entry's signature") }
        self.container = container
        self.sequence = sequence
        self.previous = previous
        self.epoch = epoch
        self.signer = signer
        self.time = time
        self.device = device
        self.changes = changes
        self.signature = signature
    }

    /// True if `device` signed this entry as it is.
    public func isSigned(by device: DeviceIdentity) -> Bool {
        device.signing == signer && device.signingKey.isValidSignature(signature, for: signedMessage)
    }

    /// Where entry `sequence` is stored, in every sealed container (so a new device finds the
    /// genesis, and with it the container's ID): the first 16 bytes of SHA-256 of the label
    /// `syncfs-sealed-v1 ledger-id` and the sequence.
    public static func fileID(of sequence: UInt64) -> FileID {
        var tail = SealedWriter()
        tail.uint64(sequence)
        return SealedFormat.reservedID("ledger-id", tail.bytes)
    }
}

extension SealedRecord {
    /// The digest a ledger entry names for a stored record: SHA-256 over the label and the
    /// record's exact bytes.
    public static func digest(_ record: [UInt8]) -> [UInt8] {
        var input = SealedWriter(capacity: record.count + 32)
        input.counted(SealedFormat.label("record-digest"))
        input.fixed(record)
        return Array(SHA256.hash(data: input.bytes))
    }
}
