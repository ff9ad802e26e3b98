/// Names the daemon changed behind the kernel's back (a remote change, a conflict copy) whose
/// invalidation the kernel has not received yet: until it has, the kernel may still resolve the
/// name to the node it led to before, and a `rename`, `unlink` or `rmdir` it sends by that name
/// would act on a node the program never looked at (a file it read moved aside, another one
/// deleted in its place). Those calls answer `ESTALE` instead (`Namespace.refuseIfUnannounced`);
/// the kernel then looks the name up again (`LOOKUP_REVAL`) and retries once.
///
/// A name is marked when a transaction collects its entry invalidation, and unmarked once the
/// invalidation was sent (`LiveTree.perform`) or the kernel looked the name up after the change
/// (its answer is the new binding). Marks of invalidations that could not be sent (the echo's
/// call stuck in the kernel at shutdown) stay. Under the namespace lock.
///
/// Every entry invalidation marks its name, not only a conflict copy's: a remote edit of a file
/// the kernel knows gives the name a new inode (`.deleted`), and a by-name call in that window
/// costs one `ESTALE` and the kernel's retry. Not covered: a lookup whose answer the kernel
/// drops (its caller killed by a signal meanwhile) still counts as looked up, leaving the old
/// binding usable until the invalidation arrives; the daemon cannot see the drop.
struct UnannouncedNames {
    private struct Key: Hashable {
        let parent: InodeNumber
        let name: FileName
    }

    private struct Mark {
        /// Invalidations collected and not yet sent.
        var pending: Int
        /// The kernel looked the name up since the last of them was collected.
        var lookedUp: Bool
    }

    private var marks: [Key: Mark] = [:]

    var isEmpty: Bool { marks.isEmpty }

    /// A transaction collected an invalidation of the name.
    mutating func collected(parent: InodeNumber, name: FileName) {
        marks[Key(parent: parent, name: name), default: Mark(pending: 0, lookedUp: false)].pending += 1
        marks[Key(parent: parent, name: name)]?.lookedUp = false
    }

    /// An invalidation of the name reached the kernel.
    mutating func sent(parent: InodeNumber, name: FileName) {
        let key = Key(parent: parent, name: name)
        guard var mark = marks[key] else { return }
        mark.pending -= 1
        marks[key] = mark.pending > 0 ? mark : nil
    }

    /// The kernel looked the name up: what it holds now is the current binding.
    mutating func lookedUp(parent: InodeNumber, name: FileName) {
        guard !marks.isEmpty else { return }
        marks[Key(parent: parent, name: name)]?.lookedUp = true
    }

    /// Whether the kernel may still resolve the name to what it led to before a change.
    func mayBeStale(parent: InodeNumber, name: FileName) -> Bool {
        guard !marks.isEmpty, let mark = marks[Key(parent: parent, name: name)] else { return false }
        return !mark.lookedUp
    }
}

extension Namespace {
    /// `ESTALE` if the kernel may still resolve `name` in `parent` to another node than the tree's
    /// (`UnannouncedNames`): for the calls that act on an existing entry by name.
    func refuseIfUnannounced(_ parent: InodeNumber, _ name: FileName) throws(FSError) {
        if unannouncedNames.mayBeStale(parent: parent, name: name) { throw .stale }
    }
}
