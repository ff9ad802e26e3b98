import Crypto
import SyncBackend
import Testing

@testable import SyncSealed

/// Known answers of the sealed format, computed independently by scripts/sealed/vectors.py
/// (Python's `cryptography`): the same inputs must give these bytes, or the format changed.
@Suite("Sealed format: known answers")
struct SealedVectorTests {
    static let secret = EpochSecret(bytes: Array(0..<32))!
    static let container = SealedContainerID(bytes: Array(0xA0..<0xB0))!
    static let keys = EpochKeys(secret: secret, container: container, epoch: 3)
    static let nonce = try! AES.GCM.Nonce(data: Array(0..<12))
    static let plain = Array("hello, sealed world".utf8)

    static func hex(_ key: SymmetricKey) -> String { key.withUnsafeBytes { Hex.string($0) } }
    static func sha(_ bytes: [UInt8]) -> String { Hex.string(SHA256.hash(data: bytes)) }

    @Test func epochKeysAreHKDFOfTheSecret() {
        #expect(Self.hex(Self.keys.record) == "c18729c48edc07e827308bc48567f413c3b5f44f935b919db6b07d19bbaeebbf")
        #expect(Self.hex(Self.keys.chunk) == "d59fd73993496eb0f8d8dcefd392f3759586657bc30f8e0d14aca86a36418a65")
        #expect(Self.hex(Self.keys.chunkID) == "492d5f4a54eebe9c793bccf9fe2815af61147ea50fd9782533a5138e819be7e5")
        #expect(Self.hex(Self.keys.chunkerKey) == "88babf3f2f8c355bb8431f89e9864c340995405d51491affb6022724936ea3da")
    }

    @Test func aChunkIsNamedByAKeyedMACAndSealedWithItsPadding() {
        let chunk = Self.plain.withUnsafeBytes { ChunkCodec.encode($0) }
        #expect(chunk.encoding == .raw)
        let sealed = SealedChunkCodec.seal(chunk, keys: Self.keys, nonce: Self.nonce)
        #expect(sealed.id.hex == "2879f4dac05e47950cdc206b3f9f9ccaf3ad889c0018f01c97003832691eb4f1")
        #expect(sealed.envelope.count == 512)
        #expect(Self.sha(sealed.envelope) == "2181d06c232bc0b619a816bc8d9aca8044e94cf7eb88423b0a4c11ae6b6cf398")
    }

    @Test func aRecordIsSealedAndDigested() {
        let state = EntryState(
            parent: FileID(high: 0x1111_1111_1111_1111, low: 0x1111_1111_1111_1111), name: Array("notes.txt".utf8),
            kind: .file, mode: 0o644, mtime: 1_700_000_000_000_000_000, size: Int64(Self.plain.count),
            xattrs: ["user.color": Array("blue".utf8)],
            manifest: [
                ChunkRef(hash: Self.plain.withUnsafeBytes { ChunkCodec.hash($0) }, length: Int64(Self.plain.count))
            ])
        let id = FileID(high: 0x2222_2222_2222_2222, low: 0x2222_2222_2222_2222)
        let record = SealedRecord.seal(state, of: id, keys: Self.keys, nonce: Self.nonce)
        #expect(record.count == 512)
        #expect(Self.sha(record) == "365784fd54acffec7d729105e9230217339782a112a0bba15e74bf05a021ca8b")
        #expect(
            Hex.string(SealedRecord.digest(record))
                == "648f4572fc7f1327b81f3aa530762e79e7b52a3e8d596e468b83cacba0965a57")
    }

    @Test func theKeyedGearTableComesFromTheChunkerKey() {
        let table = Self.keys.chunker.gearTable
        #expect(table[0] == 0x2841_eb15_7e7e_7a4a)
        #expect(table[255] == 0x7bb1_73bb_3395_c846)
        #expect(table != ContentDefinedChunker.standardGearTable)
    }

    @Test func aLedgerEntryIsSignedDeterministically() throws {
        let signer = DeviceKeys(
            signing: try Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x33, count: 32)),
            agreement: Curve25519.KeyAgreement.PrivateKey())
        let change = LedgerChange(
            id: FileID(high: 0x2222_2222_2222_2222, low: 0x2222_2222_2222_2222),
            digest: Array(Hex.bytes("648f4572fc7f1327b81f3aa530762e79e7b52a3e8d596e468b83cacba0965a57")), deleted: false
        )
        let entry = LedgerEntry(
            container: Self.container, sequence: 2, previous: [UInt8](repeating: 0x44, count: 32), epoch: 3,
            time: 1_700_000_000_000, device: "laptop", changes: [change], signedBy: signer)
        #expect(entry.encoded.count == 228)
        #expect(Self.sha(entry.encoded) == "ffe1a2fc3abc23bddeba763f2bf53f6e1cf0d744b5664f1d52c7a723690359a2")
        #expect(Hex.string(entry.digest) == "643918b37c63ac14ece8463771bb269294088251847c0f74c6e0f7c6d26af570")
    }

    @Test func reservedIDsAreFixed() {
        #expect(LedgerEntry.fileID(of: 1).hex == "7b948b5f48dd0fe6f6e236abab1f407b")
        #expect(Keyring.fileID(publishedIn: 1).hex == "5ab6474a2f54efb68c70a8856db926a7")
    }

    @Test func theRecoveryKeysAreDerivedFromItsSecret() {
        let recovery = RecoveryKey(secret: [UInt8](repeating: 0x55, count: 32))
        #expect(
            Hex.string(recovery.deviceKeys.identity.signing)
                == "6cf3735183b2742ced054aba4b5c9a848f6d4c721fba6e33fcd7f9907090016b")
    }

    @Test(arguments: [
        (0, 512), (1, 512), (600, 1024), (4096, 4096), (4097, 4352), (5000, 5120), (1_000_000, 1_015_808),
        (4 << 20, 4 << 20),
    ])
    func sizesArePaddedToTheirClass(_ length: Int, _ padded: Int) {
        #expect(SealedPadding.bucket(length) == padded)
    }
}
