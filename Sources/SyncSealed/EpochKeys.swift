import Crypto
import SyncBackend

/// A key epoch's number. Epoch 0 is made with the container; removing a device or a member starts
/// the next one, whose secret the removed device never receives.
public typealias KeyEpoch = UInt32

/// An epoch's secret: 32 random bytes, made on a member device, stored only wrapped to each
/// member device and to the recovery key (`EpochKeyWrap`). Everything else is derived from it.
public struct EpochSecret: Sendable, Equatable {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    public static func random() -> EpochSecret {
        EpochSecret(bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })!
    }
}

/// The keys of one epoch of one container, each derived from the epoch's secret with HKDF-SHA256
/// (RFC 5869): salt `syncfs-sealed-v1 keys`, info = `PURPOSE` ‖ container ID ‖ epoch (big
/// endian). One key per use, never one key for two:
/// - `record`: AES-256-GCM key of entry records;
/// - `chunk`: AES-256-GCM key of chunk bodies;
/// - `chunkID`: HMAC-SHA256 key naming chunks (`chunkID(for:)`);
/// - `chunker`: the seed of the keyed chunker's gear table (`chunker`).
public struct EpochKeys: Sendable {
    public let container: SealedContainerID
    public let epoch: KeyEpoch
    let record: SymmetricKey
    let chunk: SymmetricKey
    let chunkID: SymmetricKey
    let chunkerKey: SymmetricKey

    public init(secret: EpochSecret, container: SealedContainerID, epoch: KeyEpoch) {
        self.container = container
        self.epoch = epoch
        let master = SymmetricKey(data: secret.bytes)
        func derive(_ purpose: String) -> SymmetricKey {
            var info = SealedWriter()
            info.fixed(Array(purpose.utf8))
            info.fixed(container.bytes)
            info.uint32(epoch)
            return HKDF<SHA256>.deriveKey(
                inputKeyMaterial: master, salt: SealedFormat.label("keys"), info: info.bytes, outputByteCount: 32)
        }
        self.record = derive("record")
        self.chunk = derive("chunk")
        self.chunkID = derive("chunk-id")
        self.chunkerKey = derive("chunker")
    }

    /// The name a chunk is stored under: HMAC-SHA256 of its plain SHA-256, keyed by the epoch's
    /// `chunkID` key. Equal content in one epoch of one container gets one name (dedup); nobody
    /// without the key can tell which content a name stands for, or confirm a guess.
    public func chunkID(for hash: ChunkHash) -> ChunkHash {
        ChunkHash(bytes: Array(HMAC<SHA256>.authenticationCode(for: hash.bytes, using: chunkID)))!
    }
}
