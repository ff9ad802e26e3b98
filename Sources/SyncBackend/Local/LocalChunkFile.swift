/// The format of a chunk file (`chunks/XY/<64 hex>`): a 16-byte header, then the payload.
///
///     offset  size  field
///     0       4     magic "SFCK"
///     4       1     format version (1)
///     5       1     encoding (`ChunkEncoding` raw value: 0 raw, 1 zlib, 2 sealed)
///     6       2     reserved, zero
///     8       8     plain length, unsigned little-endian
///     16      …     the encoded payload, to the end of the file
///
/// The hash is the file's name and is not repeated inside. The container does not verify the
/// payload: a damaged header reads as `corruptChunk`, a damaged payload is returned as stored and
/// the reader's decoder (which checks length and SHA-256) finds it. A sealed chunk (encoding 2)
/// is stored the same way, its payload the client's ciphertext, as it came.
///
/// Public because an object store keeps the same bytes as its objects (`SyncS3`'s
/// `S3ChunkBlobStore`): one chunk format on every backend.
public enum LocalChunkFile {
    static let magic: [UInt8] = Array("SFCK".utf8)
    static let version: UInt8 = 1
    public static let headerSize = 16

    /// The file's bytes for `chunk`.
    public static func encode(_ chunk: EncodedChunk) -> [UInt8] {
        var bytes = magic
        bytes.reserveCapacity(headerSize + chunk.payload.count)
        bytes.append(version)
        bytes.append(chunk.encoding.rawValue)
        bytes.append(contentsOf: [0, 0])
        var length = UInt64(chunk.plainLength).littleEndian
        withUnsafeBytes(of: &length) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: chunk.payload)
        return bytes
    }

    /// The chunk in `bytes` (a whole file), or nil if its header is not one of ours.
    public static func decode(_ bytes: [UInt8], hash: ChunkHash) -> EncodedChunk? {
        guard let (encoding, plainLength) = header(bytes) else { return nil }
        return EncodedChunk(
            hash: hash, encoding: encoding, plainLength: plainLength, payload: Array(bytes[headerSize...]))
    }

    /// The encoding and plain length the header of `bytes` declares, or nil if it is damaged.
    public static func header(_ bytes: [UInt8]) -> (ChunkEncoding, Int)? {
        guard bytes.count >= headerSize, Array(bytes[0..<4]) == magic, bytes[4] == version,
            let encoding = ChunkEncoding(rawValue: bytes[5]), bytes[6] == 0, bytes[7] == 0
        else { return nil }
        var length: UInt64 = 0
        for index in (8..<16).reversed() { length = length << 8 | UInt64(bytes[index]) }
        guard length <= UInt64(Int.max) else { return nil }
        return (encoding, Int(length))
    }
}
