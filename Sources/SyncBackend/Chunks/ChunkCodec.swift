import CZlib
import Crypto

/// Turns plain chunk bytes into `EncodedChunk`s and back: SHA-256 for identity, zlib for size.
///
/// Contract:
/// - `encode` never fails: a chunk zlib does not shrink (or that zlib cannot compress) is stored raw.
/// - `decode` trusts nothing in the chunk: it returns bytes only if the payload decodes to exactly
///   `plainLength` bytes whose SHA-256 is `hash`; anything else is `corruptChunk(hash)`. A sealed
///   chunk (`ChunkEncoding.sealed`) is never plain content: `decode` refuses it
///   (`corruptChunk`), so nothing above the client that sealed it can take its ciphertext for a
///   file's bytes.
/// - `verifyShape` is what a container can check of a chunk it stores or copies: a plain chunk
///   decodes to its hash; a sealed one only has its length checked.
/// - The zlib payload is the zlib format (RFC 1950: header, deflate data, Adler-32), not raw
///   deflate, and holds exactly one stream with nothing after it.
public enum ChunkCodec {
    /// SHA-256 of the bytes (swift-crypto).
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> ChunkHash {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        return ChunkHash(bytes: Array(hasher.finalize()))!
    }

    /// Hashes and compresses with zlib at `level` (0...9; 1 is the default the product uses). If compressed size >=
    /// plain size the chunk is stored raw (encoding .raw, payload = the bytes).
    ///
    /// Precondition: `level` is in 0...9. Sets up zlib for this one chunk; to encode many, reuse a `ChunkEncoder`.
    public static func encode(_ bytes: UnsafeRawBufferPointer, level: Int32 = 1) -> EncodedChunk {
        ChunkEncoder(level: level).encode(bytes)
    }

    /// Decodes and verifies: the payload must decode (zlib or raw) to exactly `plainLength` bytes whose SHA-256 is
    /// `chunk.hash`; otherwise throws ContainerProtocolError.corruptChunk(chunk.hash). A sealed chunk is always
    /// `corruptChunk`: its payload is ciphertext, never plain content.
    ///
    /// At most `plainLength` bytes are allocated, and only when `plainLength` is plausible for the payload's size
    /// (deflate cannot expand more than 1032:1), so a forged length cannot make the reader allocate without bound.
    public static func decode(_ chunk: EncodedChunk) throws(ContainerProtocolError) -> [UInt8] {
        let plain: [UInt8]
        switch chunk.encoding {
        case .raw:
            guard chunk.payload.count == chunk.plainLength else { throw .corruptChunk(chunk.hash) }
            plain = chunk.payload
        case .zlib:
            guard let decompressed = decompress(chunk.payload, plainLength: chunk.plainLength) else {
                throw .corruptChunk(chunk.hash)
            }
            plain = decompressed
        case .sealed:
            throw .corruptChunk(chunk.hash)
        }
        guard plain.withUnsafeBytes({ hash($0) }) == chunk.hash else { throw .corruptChunk(chunk.hash) }
        return plain
    }

    /// Checks `chunk` as far as a container can, throwing `corruptChunk(chunk.hash)` otherwise: a
    /// sealed chunk's payload holds exactly `plainLength` bytes (its name is a keyed MAC only its
    /// client can check); any other chunk decodes to its hash (`decode`). CPU-heavy for a plain
    /// chunk (zlib and SHA-256), as `decode`.
    public static func verifyShape(_ chunk: EncodedChunk) throws(ContainerProtocolError) {
        guard chunk.encoding == .sealed else {
            _ = try decode(chunk)
            return
        }
        guard chunk.plainLength >= 0, chunk.payload.count == chunk.plainLength else { throw .corruptChunk(chunk.hash) }
    }

    /// Exactly `plainLength` bytes decoded from `payload`, or nil if the payload is not one complete zlib stream
    /// (with nothing after it) of exactly that length.
    private static func decompress(_ payload: [UInt8], plainLength: Int) -> [UInt8]? {
        guard plainLength >= 0, plainLength <= payload.count * maximumDeflateRatio else { return nil }
        var succeeded = false
        // One spare byte of capacity so that the destination is never null, even for an empty chunk.
        let output = [UInt8](unsafeUninitializedCapacity: plainLength + 1) { buffer, initializedCount in
            payload.withUnsafeBufferPointer { input in
                var outputLength = uLong(plainLength)
                var inputLength = uLong(input.count)
                let status = uncompress2(buffer.baseAddress, &outputLength, input.baseAddress, &inputLength)
                succeeded = status == Z_OK && outputLength == uLong(plainLength) && inputLength == uLong(input.count)
            }
            initializedCount = succeeded ? plainLength : 0
        }
        return succeeded ? output : nil
    }

    /// Deflate's largest expansion: a 258-byte match costs at least 2 bits (length and distance codes).
    private static let maximumDeflateRatio = 1032
}
