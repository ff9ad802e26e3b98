import Foundation
import Glibc
import SyncBackend

/// The check of a clean cached file against the chunk hashes of the manifest it is recorded to
/// hold, shared by every reader of the file during its first reads after a
/// mount. Chunks are checked when a read first covers them (SHA-256 of the bytes in the cache
/// file), each once; readers of a chunk being checked wait for that check. Invariant: a chunk
/// marked verified held exactly its manifest bytes when it was read (writes clear the file's
/// need for checking before they can change it: `CacheVerifier.cachedContentToVerify`).
final class CacheVerification: @unchecked Sendable {
    /// What a check of a range found.
    enum Outcome: Equatable {
        /// Every chunk of the range holds its manifest bytes; `complete`: so does the whole file.
        case intact(complete: Bool)
        /// The chunk at `index` does not (or could not be read): the copy must not be served.
        case damaged(index: Int)
    }

    let manifest: [ChunkRef]
    /// Where each chunk starts in the file.
    let offsets: [Int64]
    let length: Int64

    private let lock = NSLock()
    private var verified: [Bool]
    private var remaining: Int
    /// Reused for each chunk read (under `lock`): no allocation per chunk.
    private var buffer: [UInt8] = []

    init(manifest: [ChunkRef]) {
        self.manifest = manifest
        let layout = ManifestLayout(manifest)
        offsets = layout.offsets
        length = layout.length
        verified = Array(repeating: false, count: manifest.count)
        remaining = manifest.count
    }

    /// Checks the chunks holding bytes `offset ..< offset + count` (all of them if `count` is nil)
    /// that were not checked yet, reading them from `descriptor` (the cache file).
    func verify(offset: Int64, count: Int?, descriptor: Int32) -> Outcome {
        lock.lock()
        defer { lock.unlock() }
        for index in chunks(offset: offset, count: count) where !verified[index] {
            guard Self.holds(manifest[index], at: offsets[index], in: descriptor, buffer: &buffer) else {
                return .damaged(index: index)
            }
            verified[index] = true
            remaining -= 1
        }
        return .intact(complete: remaining == 0)
    }

    /// Indices of the chunks holding bytes `offset ..< offset + count` (every chunk for nil).
    func chunks(offset: Int64, count: Int?) -> Range<Int> {
        guard let count else { return 0..<manifest.count }
        guard count > 0, offset < length, !manifest.isEmpty else { return 0..<0 }
        let end = min(length, max(offset, 0) + Int64(count))
        return chunkIndex(containing: max(offset, 0))..<(chunkIndex(containing: end - 1) + 1)
    }

    private func chunkIndex(containing position: Int64) -> Int {
        var low = 0
        var high = offsets.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if offsets[middle] <= position { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// True if the file holds exactly `ref`'s bytes at `offset` (a short read or an I/O error: no).
    static func holds(_ ref: ChunkRef, at offset: Int64, in descriptor: Int32, buffer: inout [UInt8]) -> Bool {
        let length = Int(ref.length)
        if buffer.count < length { buffer = [UInt8](repeating: 0, count: length) }
        return buffer.withUnsafeMutableBytes { space in
            var done = 0
            while done < length {
                let count = pread(descriptor, space.baseAddress! + done, length - done, off_t(offset) + off_t(done))
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                done += count
            }
            return ChunkCodec.hash(UnsafeRawBufferPointer(rebasing: space[0..<length])) == ref.hash
        }
    }
}
