import CZlib

/// Encodes chunks like `ChunkCodec.encode`, keeping its zlib state and output buffer between chunks.
///
/// Contract:
/// - `encode(bytes)` returns exactly what `ChunkCodec.encode(bytes, level: level)` returns: the same
///   hash, the same encoding and the same payload.
/// - A chunk is stored `.zlib` only if its zlib stream is shorter than the plain bytes; zlib is given
///   at most `plainLength - 1` bytes of output room and the chunk is stored `.raw` as soon as that
///   runs out (level 0, whose stored blocks never shrink anything, is always raw without running zlib).
/// - If zlib cannot be set up (out of memory) every chunk is stored raw; encoding never fails.
/// - Not thread-safe: use one encoder per thread. The scratch buffer grows to the largest chunk seen.
public final class ChunkEncoder {
    /// The zlib level, 0...9.
    public let level: Int32
    /// Heap-allocated because zlib's state points back at it: it must never move.
    private let stream: UnsafeMutablePointer<z_stream>
    private let isReady: Bool
    private var scratch: UnsafeMutableRawBufferPointer

    /// Precondition: `level` is in 0...9.
    public init(level: Int32 = 1) {
        precondition((0...9).contains(level), "zlib level must be 0...9")
        self.level = level
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        self.stream = stream
        scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 16)
        // deflateInit2 is a macro; this is its expansion: zlib format (15-bit window), default memory and strategy.
        isReady =
            level > 0
            && ZLIB_VERSION.withCString {
                deflateInit2_(
                    stream, level, Z_DEFLATED, MAX_WBITS, 8, Z_DEFAULT_STRATEGY, $0, Int32(MemoryLayout<z_stream>.size))
            } == Z_OK
    }

    deinit {
        if isReady { deflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
        scratch.deallocate()
    }

    /// Hashes and compresses; see `ChunkCodec.encode`.
    public func encode(_ bytes: UnsafeRawBufferPointer) -> EncodedChunk {
        let hash = ChunkCodec.hash(bytes)
        if !sampleLooksIncompressible(bytes), let compressedCount = compress(bytes) {
            let payload = Array(UnsafeRawBufferPointer(rebasing: scratch[..<compressedCount]))
            return EncodedChunk(hash: hash, encoding: .zlib, plainLength: bytes.count, payload: payload)
        }
        return EncodedChunk(hash: hash, encoding: .raw, plainLength: bytes.count, payload: Array(bytes))
    }

    /// Bytes compressed on trial before a large chunk is compressed whole.
    static let sampleSize = 64 << 10

    /// True if the chunk is large and its first `sampleSize` bytes do not shrink by 2% at this
    /// level: compressed data (photos, video, archives) is then stored raw without spending a
    /// whole chunk's worth of zlib time on it (zlib is ~10× slower than the rest of the pipeline).
    /// A chunk judged this way could occasionally have shrunk a little; it is still stored
    /// correctly (raw), only less compactly.
    private func sampleLooksIncompressible(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 4 * Self.sampleSize, level != 0 else { return false }
        let sample = UnsafeRawBufferPointer(rebasing: bytes[..<Self.sampleSize])
        guard let produced = compress(sample) else { return true }
        return produced * 100 >= Self.sampleSize * 98
    }

    /// Compresses `bytes` into `scratch`; returns the zlib stream's length if it is shorter than `bytes`, else nil.
    private func compress(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard isReady, let input = bytes.baseAddress, bytes.count > 1 else { return nil }
        let room = bytes.count - 1
        if scratch.count < room {
            scratch.deallocate()
            scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: room, alignment: 16)
        }
        guard deflateReset(stream) == Z_OK else { return nil }
        let pieceLimit = Int(UInt32.max)
        var consumed = 0
        var produced = 0
        while true {
            // zlib counts in 32 bits: feed input and output room in pieces of at most 4 GiB.
            let inputPiece = Swift.min(bytes.count - consumed, pieceLimit)
            let outputPiece = Swift.min(room - produced, pieceLimit)
            stream.pointee.next_in = UnsafeMutablePointer(
                mutating: (input + consumed).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(inputPiece)
            stream.pointee.next_out = (scratch.baseAddress! + produced).assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(outputPiece)
            let isLastPiece = consumed + inputPiece == bytes.count
            let status = deflate(stream, isLastPiece ? Z_FINISH : Z_NO_FLUSH)
            consumed += inputPiece - Int(stream.pointee.avail_in)
            produced += outputPiece - Int(stream.pointee.avail_out)
            if status == Z_STREAM_END { return produced }
            if status != Z_OK && status != Z_BUF_ERROR { return nil }
            if produced == room { return nil }  // not shorter than the plain bytes
        }
    }
}
