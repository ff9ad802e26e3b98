import Glibc

/// Why `FileChunker` could not read a file.
public enum FileChunkerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `pread` failed with this errno (never EINTR, which is retried).
    case io(Int32)
    /// The file ended before the length the caller gave.
    case shortRead

    public var description: String {
        switch self {
        case .io(let code): return "read failed: \(String(cString: strerror(code)))"
        case .shortRead: return "file is shorter than expected"
        }
    }
}

/// Cuts a file into content-defined chunks while reading it once, sequentially, with `pread`.
///
/// The chunks are exactly those `ContentDefinedChunker.cutPoint` gives over the same bytes held in
/// memory: the buffer is refilled whenever fewer than `maxSize` unconsumed bytes remain, so every
/// cut is made with a full `maxSize` window or at the end of the data.
public enum FileChunker {
    /// The read buffer size (grown to `2 * maxSize` for chunkers with a larger maximum, shrunk to the length of a
    /// smaller file).
    public static let bufferSize = 8 << 20

    /// Calls `body` with each chunk's bytes (valid only during the call), in order, from offset 0 to `length`. Retries
    /// EINTR; throws `FileChunkerError.io(errno)` on read errors and `.shortRead` if the file is shorter than `length`.
    ///
    /// - `body` is never called with an empty buffer; `length == 0` calls it zero times.
    /// - Bytes past `length` are not read. The descriptor's file offset is not used or moved (reads are positional).
    /// - On an error (from reading or from `body`, which is rethrown unchanged) the chunks before it have already been
    ///   delivered; nothing is delivered after it.
    /// - Precondition: `length >= 0`.
    public static func forEachChunk(
        of descriptor: Int32, length: Int64, chunker: ContentDefinedChunker = .standard,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        precondition(length >= 0, "negative length")
        guard length > 0 else { return }
        // A file that fits is read whole into a buffer of its size; a larger one streams through a fixed buffer.
        let capacity = Int(Swift.min(Int64(Swift.max(bufferSize, 2 * chunker.maxSize)), length))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 64)
        defer { buffer.deallocate() }
        let base = buffer.baseAddress!
        var readOffset: Int64 = 0  // the file offset of the next byte to read
        var start = 0  // buffer[start..<end] holds the bytes read but not yet delivered
        var end = 0
        while true {
            if end - start < chunker.maxSize && readOffset < length {
                if start > 0 {
                    memmove(base, base + start, end - start)
                    end -= start
                    start = 0
                }
                let wanted = Int(Swift.min(Int64(capacity - end), length - readOffset))
                try readFully(descriptor, into: base + end, count: wanted, at: readOffset)
                end += wanted
                readOffset += Int64(wanted)
            }
            if start == end { return }
            let cut = chunker.cutPoint(in: UnsafeRawBufferPointer(start: base + start, count: end - start))
            try body(UnsafeRawBufferPointer(start: base + start, count: cut))
            start += cut
        }
    }

    /// Reads exactly `count` bytes at `offset`, across short reads and EINTR.
    private static func readFully(
        _ descriptor: Int32, into destination: UnsafeMutableRawPointer, count: Int, at offset: Int64
    ) throws(FileChunkerError) {
        var done = 0
        while done < count {
            let result = pread(descriptor, destination + done, count - done, off_t(offset + Int64(done)))
            if result > 0 {
                done += result
            } else if result == 0 {
                throw .shortRead
            } else if errno != EINTR {
                throw .io(errno)
            }
        }
    }
}
