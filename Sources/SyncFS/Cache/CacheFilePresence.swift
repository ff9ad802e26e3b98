import SyncBackend
import Synchronization

/// Which file IDs have a cache file, so that a placeholder without one is answered without a
/// `stat` (a cold `find` of 100,000 placeholders made the daemon `stat` 100,000
/// missing cache files in cache directories the kernel had dropped — one disk read each — only
/// for the `st_blocks` of READDIRPLUS replies).
///
/// Contract: `isKnownAbsent(id)` is true only if `id`'s cache file does not exist at that
/// instant. It holds because
/// - nothing is known before the cache directory was listed once (`recordListing`, at load);
///   a listing only adds IDs, so an ID whose file a concurrent removal unlinked stays "present"
///   (the safe direction: a `stat` answers);
/// - every operation that may create a cache file marks its ID present *before* the file
///   operation, and every removal marks it absent only *after* its `unlink` (or a rename away)
///   succeeded, both while holding the lock of the ID's stripe — so a creation and a removal of
///   the same ID are ordered, and no check can fall between a file appearing and its ID being
///   recorded;
/// - every cache file of this state directory is created, moved and removed through
///   `ContentCache` (one `ContentCache` per mounted state directory; its copies share this
///   object). A file that vanishes behind its back (a user deleting it, `recover` taking it)
///   only leaves its ID "present", which costs a `stat`, never a wrong answer.
final class CacheFilePresence: Sendable {
    private final class Stripe: Sendable {
        let ids = Mutex(Set<FileID>())
    }

    /// Striped so that creations of different files rarely wait for each other's system call.
    private let stripes: [Stripe]
    private let listed = Atomic<Bool>(false)

    init(stripeCount: Int = 64) {
        stripes = (0..<max(1, stripeCount)).map { _ in Stripe() }
    }

    private func stripeIndex(of id: FileID) -> Int {
        Int(id.low % UInt64(stripes.count))
    }

    /// True only if `id` certainly has no cache file now (see the type's contract).
    func isKnownAbsent(_ id: FileID) -> Bool {
        guard listed.load(ordering: .acquiring) else { return false }
        return stripes[stripeIndex(of: id)].ids.withLock { !$0.contains(id) }
    }

    /// Runs `operation`, which may create `id`'s cache file, with `id` recorded as present first.
    func creating<Result>(_ id: FileID, _ operation: () throws(FSError) -> Result) throws(FSError) -> Result {
        try stripes[stripeIndex(of: id)].ids.withLock { ids throws(FSError) -> Result in
            ids.insert(id)
            return try operation()
        }
    }

    /// Runs `operation`, which removes `id`'s cache file and returns true if it is gone
    /// (removed, or was not there); only then is `id` recorded as absent. When `id` is known
    /// absent already, `operation` is not run: there is nothing to remove (a first attach removes
    /// a possible left-over for each of its placeholders, each a system call for nothing).
    func removing(_ id: FileID, _ operation: () -> Bool) {
        let known = listed.load(ordering: .acquiring)
        stripes[stripeIndex(of: id)].ids.withLock { ids in
            if known && !ids.contains(id) { return }
            if operation() { ids.remove(id) }
        }
    }

    /// Runs `operation`, which renames `id`'s cache file to `other`'s path and returns true if
    /// `id`'s is gone afterwards: `other` is recorded present first, `id` absent on success.
    /// Both stripes are locked, in index order (no other lock is ever taken while one is held).
    func moving(_ id: FileID, to other: FileID, _ operation: () -> Bool) -> Bool {
        let from = stripeIndex(of: id)
        let to = stripeIndex(of: other)
        if from == to {
            return stripes[from].ids.withLock { ids in
                ids.insert(other)
                let moved = operation()
                if moved && id != other { ids.remove(id) }
                return moved
            }
        }
        let (first, second) = (stripes[min(from, to)], stripes[max(from, to)])
        return first.ids.withLock { firstIDs in
            second.ids.withLock { secondIDs in
                if to < from { firstIDs.insert(other) } else { secondIDs.insert(other) }
                let moved = operation()
                if moved {
                    if from < to { firstIDs.remove(id) } else { secondIDs.remove(id) }
                }
                return moved
            }
        }
    }

    /// Adds the IDs a complete listing of the cache directory found, and from then on answers
    /// `isKnownAbsent`. Creations and removals during the listing were recorded by themselves.
    func recordListing(_ found: [FileID]) {
        var byStripe = [[FileID]](repeating: [], count: stripes.count)
        for id in found { byStripe[stripeIndex(of: id)].append(id) }
        for (index, ids) in byStripe.enumerated() where !ids.isEmpty {
            stripes[index].ids.withLock { $0.formUnion(ids) }
        }
        listed.store(true, ordering: .releasing)
    }
}
