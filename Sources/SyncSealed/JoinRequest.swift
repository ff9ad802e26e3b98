import Crypto
import SyncBackend

/// A device's request to join a sealed container: its public keys and a name for people, signed
/// with its own Ed25519 key. The joining device stores it itself (it holds no key of the container
/// yet), outside the ledger, at a file ID derived from its signing key; a member lists it with its
/// safety code and, once the owner compared the code on both devices, admits the device. The
/// server can add requests of its own, but no member admits a device whose code nobody compared.
///
/// The request names the ledger head the device saw when it asked (`seen`), and the device keeps
/// it: a member admits the request only if that head is in its own ledger with no key epoch
/// started after it (so no member was removed since), and the device, once admitted, accepts only
/// a ledger that runs through it. A removed member and the server together cannot show the new
/// device a fork from before the removal in which the removed member admits it.
///
/// Encoded: `version (1) ‖ signing (32) ‖ agreement (32) ‖ counted name (at most 64 bytes of
/// UTF-8) ‖ time in ms (8) ‖ seen sequence (8) ‖ seen digest (32) ‖ Ed25519 signature (64)` over
/// the label `syncfs-sealed-v1 join` and everything before it.
public struct JoinRequest: Equatable, Sendable {
    public let device: DeviceIdentity
    public let name: String
    public let time: Int64
    /// The newest ledger entry the device had seen when it asked.
    public let seen: LedgerHead
    private(set) var signature: [UInt8]

    public static let maximumNameBytes = 64

    public init(device keys: DeviceKeys, name: String, time: Int64, seen: LedgerHead) {
        precondition(seen.digest.count == 32)
        self.device = keys.identity
        self.name = SealedText.cut(name, toBytes: Self.maximumNameBytes)
        self.time = time
        self.seen = seen
        self.signature = []
        self.signature = keys.sign(signedMessage)
    }

    private var body: [UInt8] {
        var out = SealedWriter()
        out.byte(SealedFormat.version)
        out.fixed(device.signing)
        out.fixed(device.agreement)
        out.counted(Array(name.utf8))
        out.int64(time)
        out.uint64(seen.sequence)
        out.fixed(seen.digest)
        return out.bytes
    }

    private var signedMessage: [UInt8] {
        var message = SealedWriter()
        message.counted(SealedFormat.label("join"))
        message.fixed(body)
        return message.bytes
    }

    public var encoded: [UInt8] { body + signature }

    /// Reads a request and checks its own signature (which proves only that its maker holds the
    /// key it names).
    public init(encoded: [UInt8]) throws(SealedError) {
        var reader = SealedReader(encoded)
        guard let version = reader.byte() else { throw .malformed("an empty join request") }
        guard version == SealedFormat.version else { throw .unsupportedVersion(version) }
        guard let signing = reader.fixed(32), let agreement = reader.fixed(32),
            let device = DeviceIdentity(signing: signing, agreement: agreement),
            let nameBytes = reader.counted(limit: Self.maximumNameBytes),
            let name = String(validating: nameBytes, as: UTF8.self), let time = reader.int64(),
            let seenSequence = reader.uint64(), seenSequence >= 1, let seenDigest = reader.fixed(32),
            let signature = reader.fixed(64), reader.isAtEnd
        else { throw .malformed("a join request") }
        self.device = device
        self.name = name
        self.time = time
        self.seen = LedgerHead(sequence: seenSequence, digest: seenDigest)
        self.signature = signature
        guard device.signingKey.isValidSignature(signature, for: signedMessage) else {
            throw .notAuthentic("a join request not signed by the key it names")
        }
    }

    /// Where `device`'s request is stored.
    public static func fileID(of device: DeviceIdentity) -> FileID {
        SealedFormat.reservedID("join-id", device.signing)
    }
}
