import Crypto
import SyncBackend

/// The constants of the sealed format (doc/CRYPTO.md): its version, which every sealed object
/// carries in the clear and authenticates (a reader refuses any other), and the labels that keep
/// each use of a key apart (domain separation).
public enum SealedFormat {
    /// The only version this code writes and reads.
    public static let version: UInt8 = 1

    /// `syncfs-sealed-v1 PURPOSE`: the label of one use of a key or hash.
    static func label(_ purpose: String) -> [UInt8] { Array("syncfs-sealed-v1 \(purpose)".utf8) }

    /// A file ID the format reserves: the first 16 bytes of SHA-256 over `label(purpose)` and
    /// `suffix`.
    static func reservedID(_ purpose: String, _ suffix: [UInt8] = []) -> FileID {
        var input = SealedWriter()
        input.counted(label(purpose))
        input.fixed(suffix)
        var reader = SealedReader(Array(SHA256.hash(data: input.bytes).prefix(16)))
        guard let id = reader.fileID() else { preconditionFailure("16 bytes are a file ID") }
        return id
    }

    /// AES-256-GCM's nonce and tag sizes.
    static let nonceBytes = 12
    static let tagBytes = 16
}

/// The identity of a sealed container: 16 random bytes made with its first key set. Every sealed
/// object names it in its authenticated data, so nothing moves between two sealed containers, even
/// on one server; a copy of the container (`container copy`) keeps it.
public struct SealedContainerID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    public static func random() -> SealedContainerID {
        var generator = SystemRandomNumberGenerator()
        return SealedContainerID(bytes: (0..<16).map { _ in generator.next() })!
    }

    /// 32 lowercase hex digits.
    public var description: String { Hex.string(bytes) }
}

/// Why a sealed object was refused. Every case means the bytes did not come from a member of this
/// container as they are: the reader applies nothing of it.
public enum SealedError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The object's version is not one this code reads (a downgrade or a newer client).
    case unsupportedVersion(UInt8)
    /// Too short, a length past the end, bytes left over, a field out of range.
    case malformed(String)
    /// The AEAD tag, a MAC or a signature does not check: changed, moved, or made without the key.
    case notAuthentic(String)
    /// The object names a key epoch this device holds no key for.
    case unknownEpoch(UInt32)

    public var description: String {
        switch self {
        case .unsupportedVersion(let version): "sealed format version \(version) is not one this client reads"
        case .malformed(let what): "a malformed sealed object: \(what)"
        case .notAuthentic(let what): "not authentic: \(what)"
        case .unknownEpoch(let epoch): "no key for epoch \(epoch)"
        }
    }
}
