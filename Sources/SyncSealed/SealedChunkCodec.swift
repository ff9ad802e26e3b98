import Crypto
import SyncBackend

/// Seals a chunk for the server and opens it again: the server stores the envelope under the
/// chunk's ID (a sealed chunk) and learns only the ID (a keyed MAC, `EpochKeys.chunkID`) and a
/// padded size.
///
/// The envelope's plaintext: `encoding (1) ‖ plain length (4) ‖ payload length (4) ‖ payload ‖
/// zeros`, where encoding and payload are the plain chunk's own (zlib or raw, as the mount's
/// encoder made it: compressed first, then padded, then encrypted), and the zeros bring the whole
/// envelope to a `SealedPadding` class. Opening checks, in order: the envelope (version, epoch,
/// tag, with the chunk's ID in the associated data), the padding (zeros only), the payload (it
/// decodes to the plain length, whose SHA-256 is the hash asked for) and the ID (the keyed MAC of
/// that hash). So a chunk opens only as the content it was sealed for.
public enum SealedChunkCodec {
    static let innerHeader = 9

    /// The sealed form of `chunk` (a plain chunk: `.raw` or `.zlib`, as `ChunkCodec` made it).
    public static func seal(_ chunk: EncodedChunk, keys: EpochKeys) -> SealedChunk {
        seal(chunk, keys: keys, nonce: AES.GCM.Nonce())
    }

    static func seal(_ chunk: EncodedChunk, keys: EpochKeys, nonce: AES.GCM.Nonce) -> SealedChunk {
        precondition(chunk.encoding == .raw || chunk.encoding == .zlib, "only a plain chunk is sealed")
        let id = keys.chunkID(for: chunk.hash)
        let stored = SealedPadding.bucket(SealedEnvelope.overhead + innerHeader + chunk.payload.count)
        var inner = SealedWriter(capacity: stored - SealedEnvelope.overhead)
        inner.byte(chunk.encoding.rawValue)
        inner.uint32(UInt32(chunk.plainLength))
        inner.uint32(UInt32(chunk.payload.count))
        inner.fixed(chunk.payload)
        inner.fixed(repeatElement(0, count: stored - SealedEnvelope.overhead - innerHeader - chunk.payload.count))
        let envelope = SealedEnvelope.seal(
            inner.bytes, kind: "chunk", name: id.bytes, key: keys.chunk, keys: keys, nonce: nonce)
        return SealedChunk(id: id, envelope: envelope)
    }

    /// The epoch a sealed chunk's envelope names (to pick its keys).
    public static func epoch(of envelope: [UInt8]) throws(SealedError) -> KeyEpoch {
        try SealedEnvelope.header(envelope)
    }

    /// The plain chunk whose SHA-256 is `hash`, from the envelope the server gave for its ID.
    public static func open(_ sealed: SealedChunk, as hash: ChunkHash, keys: EpochKeys) throws(SealedError)
        -> EncodedChunk
    {
        let id = keys.chunkID(for: hash)
        guard sealed.id == id else { throw .notAuthentic("the server answered chunk \(sealed.id) for \(id)") }
        let inner = try SealedEnvelope.open(sealed.envelope, kind: "chunk", name: id.bytes, key: keys.chunk, keys: keys)
        var reader = SealedReader(inner)
        guard let encodingByte = reader.byte(), let encoding = ChunkEncoding(rawValue: encodingByte),
            encoding == .raw || encoding == .zlib,
            let plainLength = reader.uint32(), let payloadLength = reader.uint32(),
            let payload = reader.fixed(Int(payloadLength)), let padding = reader.fixed(reader.remaining),
            padding.allSatisfy({ $0 == 0 })
        else { throw .malformed("the inside of chunk \(id)") }
        let plain = EncodedChunk(hash: hash, encoding: encoding, plainLength: Int(plainLength), payload: payload)
        do {
            _ = try ChunkCodec.decode(plain)
        } catch {
            throw .notAuthentic("chunk \(id) does not hold the content of \(hash)")
        }
        return plain
    }
}

/// A chunk as the server keeps it: its ID (`EpochKeys.chunkID`) and the envelope.
public struct SealedChunk: Sendable, Equatable {
    public let id: ChunkHash
    public let envelope: [UInt8]

    public init(id: ChunkHash, envelope: [UInt8]) {
        self.id = id
        self.envelope = envelope
    }
}
