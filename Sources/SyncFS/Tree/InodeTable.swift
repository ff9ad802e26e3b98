/// The kernel's references to our inodes: the FUSE lookup/forget protocol, exactly.
///
/// Protocol (libfuse `fuse_lowlevel.h`, `passthrough_ll.c`): every reply that hands the kernel an
/// inode — lookup, create, mkdir, symlink, mknod, and each entry of readdirplus except `.` and
/// `..` — adds one to that inode's lookup count; `forget(ino, n)` (and each item of forget_multi)
/// subtracts `n`. While the count is above zero the kernel may name the inode in any request, so
/// it must stay resolvable even after it was unlinked. At zero the kernel has dropped it.
/// The root is implicitly referenced and never forgotten.
///
/// Generation: inode numbers are never reused while a state directory lives (a counter stored
/// with the entries), so `(ino, generation)` is unique with a generation fixed per mount; it is
/// the mount count, so even a number reused after a lost counter update differs in generation.
///
/// Not thread-safe: it lives inside the file system's namespace lock.
struct InodeTable: Sendable {
    private var counts: [InodeNumber: UInt64] = [:]
    let generation: UInt64

    init(generation: UInt64) { self.generation = generation }

    /// Records that a reply handed `ino` to the kernel once more.
    mutating func remember(_ ino: InodeNumber) {
        guard ino != .root else { return }
        counts[ino, default: 0] += 1
    }

    /// Applies a forget of `count` references. Returns true when the kernel holds no reference
    /// any more (the caller may then release an unlinked inode). Forgetting more than was looked
    /// up clamps at zero: the kernel never does it, and a clamp is safer than a trap.
    @discardableResult
    mutating func forget(_ ino: InodeNumber, count: UInt64) -> Bool {
        guard ino != .root, let current = counts[ino] else { return ino != .root }
        if current <= count {
            counts[ino] = nil
            return true
        }
        counts[ino] = current - count
        return false
    }

    /// How many references the kernel holds (0 for unknown inodes; 1 for the root).
    func lookupCount(_ ino: InodeNumber) -> UInt64 {
        ino == .root ? 1 : counts[ino] ?? 0
    }

    func isReferenced(_ ino: InodeNumber) -> Bool { lookupCount(ino) > 0 }

    /// Number of inodes the kernel currently references (root excluded).
    var referencedCount: Int { counts.count }
}
