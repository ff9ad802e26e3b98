import HTTPTypes
import Hummingbird
import SyncBackend

/// What a `PUT .../chunks/HASH` carries, checked before anything is stored:
/// - the headers `SyncFS-Chunk-Encoding` (`raw`/`zlib`/`sealed`) and `SyncFS-Plain-Length` (decimal,
///   0...`WireProtocol.maxChunkPlainLength`; larger is `413`), each exactly once (else `400`);
/// - a body of at most `WireProtocol.maxChunkBodyBytes` (`413`);
/// - a payload that decodes to exactly the plain length and whose SHA-256 is `HASH` (`422
///   chunkMismatch`), or for a sealed chunk a payload of exactly the plain length (its hash is a
///   name only the client can check). zlib output is bounded by the declared plain length (`ChunkCodec.decode`
///   never inflates past it), so a zip bomb costs at most 16 MiB and some CPU.
enum ChunkUpload {
    static let encodingHeader = HTTPField.Name(WireProtocol.chunkEncodingHeader)!
    static let plainLengthHeader = HTTPField.Name(WireProtocol.plainLengthHeader)!

    /// The declared encoding and plain length.
    static func headers(of request: Request) throws(WireFailure) -> (ChunkEncoding, Int) {
        guard let encodingName = try RequestReading.singleHeader(encodingHeader, of: request) else {
            throw WireFailure(.invalidRequest, "the header \(WireProtocol.chunkEncodingHeader) is missing")
        }
        guard let encoding = WireProtocol.encoding(named: encodingName) else {
            throw WireFailure(
                .invalidRequest,
                "\(WireProtocol.chunkEncodingHeader) must be raw, zlib or sealed, not '\(encodingName)'")
        }
        guard let lengthText = try RequestReading.singleHeader(plainLengthHeader, of: request) else {
            throw WireFailure(.invalidRequest, "the header \(WireProtocol.plainLengthHeader) is missing")
        }
        guard let plainLength = RequestReading.decimal(lengthText) else {
            throw WireFailure(
                .invalidRequest, "\(WireProtocol.plainLengthHeader) must be a decimal byte count, not '\(lengthText)'")
        }
        guard plainLength <= WireProtocol.maxChunkPlainLength else {
            throw WireFailure(
                .tooLarge, "a chunk holds at most \(WireProtocol.maxChunkPlainLength) plain bytes, not \(plainLength)")
        }
        return (encoding, plainLength)
    }

    /// Throws `chunkMismatch` unless `chunk` decodes to its plain length and hashes to its hash,
    /// or, sealed, holds exactly its plain length (`ChunkCodec.verifyShape`: a sealed chunk's name
    /// is not the server's to check). CPU-heavy (zlib, SHA-256 of up to 16 MiB): runs off the
    /// cooperative pool.
    static func verify(_ chunk: EncodedChunk) async throws(WireFailure) {
        let valid = await Offload.run { () -> Bool in (try? ChunkCodec.verifyShape(chunk)) != nil }
        guard valid else {
            guard chunk.encoding != .sealed else {
                throw WireFailure(
                    .chunkMismatch,
                    "the sealed payload of \(chunk.payload.count) bytes is not its plain length \(chunk.plainLength)")
            }
            throw WireFailure(
                .chunkMismatch,
                "the \(WireProtocol.encodingName(chunk.encoding)) payload of \(chunk.payload.count) bytes does not decode "
                    + "to \(chunk.plainLength) bytes whose SHA-256 is \(chunk.hash)")
        }
    }
}
