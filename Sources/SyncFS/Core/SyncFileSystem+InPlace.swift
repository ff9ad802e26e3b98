import Glibc
import SyncBackend

/// A remote append that keeps the file's inode (doc/SEMANTICS.md, "Following a file another
/// machine appends to"): `tail -F` and `inotifywait FILE` on a file another machine appends to
/// keep following the same inode, and programs that hold it open read the new bytes.
extension SyncFileSystem {
    /// Files larger than this are updated by a new inode as before (the bytes compared under the
    /// namespace lock are at most the last chunk of the old content, but the bound keeps the
    /// write itself short too).
    static let largestInPlaceAppend: Int64 = 256 << 20

    /// Appends to `node`'s cache file the bytes `contentFile` (`size` bytes, `newManifest`) has
    /// beyond the current content, if the new content is the current one with bytes added at the
    /// end (an append; checked byte by byte from the end of the chunks both manifests share, so
    /// only the old last chunk is read back). Open handles share that cache file: they read the
    /// new bytes, and never see a byte they could already read change. The caller invalidates
    /// the kernel's pages; the inotify echo's `truncate(path, size)` gives the kernel the new size
    /// (under the writeback cache it takes no size from attributes).
    ///
    /// Only for a file whose content is here and that nobody has open for writing. Returns false
    /// (the caller gives the name a new inode, as for any other edit) if it is not an append or
    /// cannot be done; a failed write leaves the old bytes as they were (it is cut back). Under
    /// the namespace lock; the node's content-change counters bracket the write, so an upload
    /// reading meanwhile discards what it read.
    func appendInPlace(
        _ node: Node, from contentFile: String, size: Int64, oldManifest: [ChunkRef], newManifest: [ChunkRef]
    ) -> Bool {
        let oldSize = node.size.load(ordering: .relaxed)
        guard size > oldSize, size <= Self.largestInPlaceAppend, node.kind == .file, !node.isPlaceholder,
            node.openWriters == 0, node.hydration == nil,
            oldManifest.reduce(0, { $0 + $1.length }) == oldSize
        else { return false }
        let target = Glibc.open(cache.path(for: node.fileID), O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard target >= 0 else { return false }
        defer { close(target) }
        var info = stat()
        guard fstat(target, &info) == 0, Int64(info.st_size) == oldSize else { return false }
        let source = Glibc.open(contentFile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard source >= 0 else { return false }
        defer { close(source) }
        let block = 1 << 16
        var old = [UInt8](repeating: 0, count: block)
        var new = [UInt8](repeating: 0, count: block)
        // The chunks both start with hold the same bytes; compare the rest of the old content.
        let shared = zip(oldManifest, newManifest).prefix { $0 == $1 }.reduce(Int64(0)) { $0 + $1.0.length }
        var offset = shared
        while offset < oldSize {
            let want = Int(min(Int64(block), oldSize - offset))
            guard pread(source, &new, want, off_t(offset)) == want, pread(target, &old, want, off_t(offset)) == want,
                old[..<want] == new[..<want]
            else { return false }
            offset += Int64(want)
        }
        node.beginContentChange()
        defer { node.endContentChange() }
        while offset < size {
            let count = pread(source, &new, block, off_t(offset))
            var written = 0
            while count > 0 && written < count {
                let result = new.withUnsafeBytes { bytes in
                    pwrite(target, bytes.baseAddress! + written, count - written, off_t(offset) + off_t(written))
                }
                if result < 0 && errno == EINTR { continue }
                if result <= 0 { break }
                written += result
            }
            guard count > 0, written == count else {
                _ = ftruncate(target, off_t(oldSize))
                return false
            }
            offset += Int64(count)
        }
        guard Glibc.fsync(target) == 0 else {
            _ = ftruncate(target, off_t(oldSize))
            return false
        }
        node.size.store(size, ordering: .relaxed)
        return true
    }
}
