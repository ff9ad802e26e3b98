import Glibc
import SyncBackend
import Synchronization

/// An open file: the kernel's file handle.
///
/// The FUSE adapter passes it to the kernel as an opaque retained pointer (`fi->fh`) and gets it
/// back on every read and write, so the data path finds its descriptor without any table or lock.
/// `descriptor` is the cache file, opened read-write (the writeback cache may read through a
/// write-only handle); it is closed exactly once, by `OpenFileIO.release`.
final class OpenFile: Sendable {
    let node: Node
    let descriptor: Int32
    /// Opened for writing (O_WRONLY or O_RDWR).
    let writable: Bool
    /// Set by the first write: the handle has content to record on flush/release.
    let wrote = Atomic<Bool>(false)
    /// Opened by the inotify echo thread (`EchoCall.open`): not counted as open.
    let isEcho: Bool

    init(node: Node, descriptor: Int32, writable: Bool, isEcho: Bool = false) {
        self.node = node
        self.descriptor = descriptor
        self.writable = writable
        self.isEcho = isEcho
    }

    var ino: InodeNumber { node.ino }
}

/// An open directory: a snapshot of its entries, taken when reading starts at offset 0, so a
/// listing is complete and stable (each name once) while the directory changes underneath.
final class OpenDirectory: Sendable {
    struct Entry: Sendable {
        let name: FileName
        let ino: InodeNumber
        let kind: NodeKind
        /// `.` or `..` (the kernel counts no reference for them).
        var isDot: Bool {
            name.withUnsafeBytes { bytes in
                bytes.count <= 2 && bytes.first == UInt8(ascii: ".") && bytes.allSatisfy { $0 == UInt8(ascii: ".") }
            }
        }
    }

    let ino: InodeNumber
    /// `nil` until the first read of the listing.
    private let snapshot = Mutex<[Entry]?>(nil)

    init(ino: InodeNumber) { self.ino = ino }

    func replace(with entries: [Entry]) { snapshot.withLock { $0 = entries } }

    /// True once a snapshot exists (a read at a non-zero offset then continues it).
    var hasSnapshot: Bool { snapshot.withLock { $0 != nil } }

    /// The entries at and after `offset` (offset `n` is the n-th entry; offsets start at 0).
    func entries(from offset: Int) -> ArraySlice<Entry> {
        snapshot.withLock { entries in
            guard let entries, offset < entries.count else { return [] }
            return entries[offset...]
        }
    }
}
