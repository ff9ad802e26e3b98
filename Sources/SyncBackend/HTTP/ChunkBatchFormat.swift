/// The body of `POST .../chunks/batch` (doc/PROTOCOL.md "Batches"): the chunks one after
/// another, each one frame, nothing before the first or after the last:
///
///     32 bytes  the chunk's hash (SHA-256 of its plain bytes; a sealed chunk's name)
///      1 byte   its encoding: 0 raw, 1 zlib, 2 sealed
///      4 bytes  its plain length, unsigned big-endian (at most `WireProtocol.maxChunkPlainLength`)
///      4 bytes  its payload length N, unsigned big-endian (at most `WireProtocol.maxChunkBodyBytes`)
///      N bytes  its payload
///
/// At most `CommitBatch.maximumChunks` frames and `CommitBatch.maximumChunkBytes` payload bytes
/// together. An empty body is a batch of no chunks.
public enum ChunkBatchFormat {
    public static let frameHeaderBytes = 32 + 1 + 4 + 4

    /// What a body breaks: a limit (`413`) or the format (`400`).
    public enum Failure: Error, Equatable, Sendable {
        case tooLarge(String)
        case malformed(String)
    }

    /// The frames of `chunks`; `invalidRequest` if a chunk or the batch is over a limit (the
    /// server would refuse it).
    public static func encode(_ chunks: [EncodedChunk]) throws(ContainerProtocolError) -> [UInt8] {
        try CommitBatch.check(chunks)
        var body: [UInt8] = []
        body.reserveCapacity(chunks.reduce(0) { $0 + frameHeaderBytes + $1.payload.count })
        for (index, chunk) in chunks.enumerated() {
            guard (0...WireProtocol.maxChunkPlainLength).contains(chunk.plainLength),
                chunk.payload.count <= WireProtocol.maxChunkBodyBytes
            else {
                throw .invalidRequest(
                    "chunk \(index) of the batch has \(chunk.plainLength) plain and \(chunk.payload.count) encoded "
                        + "bytes; at most \(WireProtocol.maxChunkPlainLength) each")
            }
            body += chunk.hash.bytes
            body.append(encodingByte(chunk.encoding))
            appendBigEndian(UInt32(chunk.plainLength), to: &body)
            appendBigEndian(UInt32(chunk.payload.count), to: &body)
            body += chunk.payload
        }
        return body
    }

    static func encodingByte(_ encoding: ChunkEncoding) -> UInt8 {
        switch encoding {
        case .raw: return 0
        case .zlib: return 1
        case .sealed: return 2
        }
    }

    static func encoding(byte: UInt8) -> ChunkEncoding? {
        switch byte {
        case 0: return .raw
        case 1: return .zlib
        case 2: return .sealed
        default: return nil
        }
    }

    private static func appendBigEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }
}

/// Reads a `ChunkBatchFormat` body as it arrives, part by part, into the chunks it carries
/// (each payload copied once, into its chunk), refusing it as soon as a frame header breaks a
/// limit or the format. It checks the framing and the limits only; whether a payload decodes to
/// its hash is the receiver's business (`ChunkCodec.decode`).
public struct ChunkBatchParser: Sendable {
    public private(set) var chunks: [EncodedChunk] = []
    private var header: [UInt8] = []
    private var pending: EncodedChunk?
    private var payloadLength = 0
    private var payloadBytes = 0
    private var plainBytes = 0
    private var hashes = Set<ChunkHash>()
    private var consumed = 0
    private let declaredLength: Int?

    /// `declaredLength`: the body's `Content-Length`, if known; room for a payload is never
    /// reserved beyond what the body can still hold.
    public init(declaredLength: Int? = nil) {
        self.declaredLength = declaredLength
        header.reserveCapacity(ChunkBatchFormat.frameHeaderBytes)
    }

    /// Takes the next bytes of the body.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(ChunkBatchFormat.Failure) {
        var offset = 0
        while offset < bytes.count {
            if pending == nil {
                let take = min(ChunkBatchFormat.frameHeaderBytes - header.count, bytes.count - offset)
                header += bytes[offset..<(offset + take)]
                offset += take
                consumed += take
                if header.count == ChunkBatchFormat.frameHeaderBytes { try beginFrame() }
            } else {
                let take = min(payloadLength - pending!.payload.count, bytes.count - offset)
                pending!.payload += bytes[offset..<(offset + take)]
                offset += take
                consumed += take
            }
            if let chunk = pending, chunk.payload.count == payloadLength {
                chunks.append(chunk)
                pending = nil
            }
        }
    }

    /// The chunks, once the body has ended; `malformed` if it ended inside a frame.
    public func finish() throws(ChunkBatchFormat.Failure) -> [EncodedChunk] {
        if let pending {
            throw .malformed(
                "the body ends inside the payload of chunk \(chunks.count) (\(pending.hash)): "
                    + "\(pending.payload.count) of its \(payloadLength) bytes arrived")
        }
        guard header.isEmpty else {
            throw .malformed(
                "the body ends inside the header of chunk \(chunks.count): \(header.count) of its "
                    + "\(ChunkBatchFormat.frameHeaderBytes) bytes arrived")
        }
        return chunks
    }

    /// A whole frame header has arrived: checks it and opens its chunk.
    private mutating func beginFrame() throws(ChunkBatchFormat.Failure) {
        let index = chunks.count
        guard index < CommitBatch.maximumChunks else {
            throw .tooLarge("more than \(CommitBatch.maximumChunks) chunks in one batch")
        }
        let hash = ChunkHash(bytes: Array(header[0..<32]))!
        guard let encoding = ChunkBatchFormat.encoding(byte: header[32]) else {
            throw .malformed(
                "chunk \(index) (\(hash)) has the encoding \(header[32]); 0 (raw), 1 (zlib) or 2 (sealed) only")
        }
        let plainLength = Self.bigEndian(header[33..<37])
        let length = Self.bigEndian(header[37..<41])
        guard plainLength <= WireProtocol.maxChunkPlainLength else {
            throw .tooLarge(
                "chunk \(index) (\(hash)) declares \(plainLength) plain bytes; at most \(WireProtocol.maxChunkPlainLength)"
            )
        }
        guard length <= WireProtocol.maxChunkBodyBytes else {
            throw .tooLarge(
                "chunk \(index) (\(hash)) declares a payload of \(length) bytes; at most \(WireProtocol.maxChunkBodyBytes)"
            )
        }
        guard payloadBytes + length <= CommitBatch.maximumChunkBytes else {
            throw .tooLarge(
                "the payloads of the batch pass \(CommitBatch.maximumChunkBytes) bytes together at chunk \(index)")
        }
        guard plainBytes + plainLength <= CommitBatch.maximumPlainBytes else {
            throw .tooLarge(
                "the chunks of the batch declare more than \(CommitBatch.maximumPlainBytes) plain bytes together "
                    + "at chunk \(index)")
        }
        guard hashes.insert(hash).inserted else {
            throw .malformed("chunk \(index) is \(hash) a second time in the batch")
        }
        payloadBytes += length
        plainBytes += plainLength
        payloadLength = length
        var payload: [UInt8] = []
        payload.reserveCapacity(min(length, declaredLength.map { max(0, $0 - consumed) } ?? (1 << 20)))
        pending = EncodedChunk(hash: hash, encoding: encoding, plainLength: plainLength, payload: payload)
        header.removeAll(keepingCapacity: true)
    }

    private static func bigEndian(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 8 | Int($1) }
    }
}
