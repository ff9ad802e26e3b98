import Synchronization

/// Whether a state directory's tree is attached, and how far its first attach has come (doc/SEMANTICS.md, "The first mount attaches the tree").
///
/// A state directory that never reached the end of its container's change feed has no tree to
/// serve: the names it shows would be a part of the container's, and a name not yet applied
/// would be answered ENOENT (and could be created again locally, to become a conflict copy).
/// Such a mount *needs* the attach: the daemon starts the engine before the FUSE session and
/// serves only once the follower reached the end of the feed (`AttachTracker.waitUntilAttached`).
///
/// The `tree_attached` fact says which: `0` is written by the first mount before its follower
/// starts, `1` behind the cursor that reached the end. A directory older than the fact is
/// attached when it has a feed cursor. A mount killed or failed in the middle of its first
/// attach leaves `0`, so the next mount waits too (and resumes from the stored cursor).
final class TreeAttach: Sendable {
    /// This mount must attach before it serves (from the facts stored at mount).
    let isNeeded: Bool
    private let state = Mutex(Progress())

    /// How far the follower has come since the mount started.
    struct Progress: Equatable, Sendable {
        /// Remote entries read from the feed and handled (applied, skipped, deferred or refused).
        var entries = 0
        /// The follower reached the end of the change feed at least once.
        var endReached = false
    }

    init(facts: StateFacts) { isNeeded = Self.isNeeded(facts) }

    /// `tree_attached` = 1: attached; 0: not; absent (older directories): attached once the
    /// follower stored a cursor.
    static func isNeeded(_ facts: StateFacts) -> Bool {
        switch facts[.treeAttached] {
        case true?: return false
        case false?: return true
        case nil: return facts[.feedCursor] == nil
        }
    }

    var progress: Progress { state.withLock { $0 } }

    /// The follower handled `count` more entries.
    func noteEntries(_ count: Int) { state.withLock { $0.entries += count } }

    /// The follower reached the end of the feed; true the first time (when a needed attach
    /// becomes complete and is to be recorded).
    func noteEndReached() -> Bool {
        state.withLock { progress in
            defer { progress.endReached = true }
            return !progress.endReached
        }
    }
}
