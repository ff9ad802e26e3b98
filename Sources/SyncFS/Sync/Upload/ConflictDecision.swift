import SyncBackend

/// Every structural conflict, decided by one pure function (doc/SEMANTICS.md, "Conflicts and
/// merges", has the same table in prose; `ConflictDecisionTests` checks it case by case).
///
/// Only the mount whose commit the container refused decides; it commits the outcome on top of
/// the container's version, so the result is made once and reaches every mount unchanged.
enum ConflictDecision {
    /// What the local side wanted to commit.
    enum Local: Equatable {
        case put(EntryState)
        case delete
    }

    /// Why the container refused the commit.
    enum Refusal: Equatable {
        /// The entry is not at our base any more: `current` is its version now (nil: it never
        /// existed, or was forgotten), made by `current.device`.
        case changed(current: RemoteEntry?)
        /// Another live entry holds the name. `freedByQueuedChange`: our own queued change to
        /// that entry would move it away (names swapped or rotated locally).
        case nameTaken(freedByQueuedChange: Bool)
        /// The parent is not a live directory; `parentDeletedRemotely` when it is a tombstone.
        case parentMissing(parentDeletedRemotely: Bool)
        /// A directory being deleted (or turned into a file) has live children.
        case directoryNotEmpty
        /// The move would put a directory inside itself.
        case wouldCreateCycle
    }

    /// What the uploader knows besides the refusal.
    struct Situation: Equatable {
        var local: Local
        var refusal: Refusal
        /// The entry state both sides started from (the local sync base), if recorded.
        var base: EntryState?
        /// The base's content (always known for a synced entry, even when `base` is not).
        var baseManifest: [ChunkRef]?
        var localDevice: String
        /// Every other queued local change was already uploaded once during this attempt.
        var othersTried = false
        /// Another queued change may be uploaded from inside this upload (false: the uploads
        /// are nested as deep as they may go, `ResolveContext.nestingLimit`).
        var mayNestUploads = true
        /// Other local changes are still queued (one of them may be what the container waits for).
        var othersQueued = false
        /// How many times this change already waited for the other queued changes.
        var roundsWaited = 0
        /// A directory delete: this mount's own queued deletes of what the container still holds
        /// below the directory wait, not yet uploaded during this attempt.
        var ownDeletesBelowQueued = false
    }

    enum Action: Equatable {
        /// The container already holds our change (our own commit whose answer was lost).
        case finished
        /// Commit our state again on top of the container's version (nil: as a new entry).
        case commitOnTop
        /// Make the local entry this merged state (content: ours or theirs, whichever the
        /// manifest names), then commit it on top of the container's version.
        case adopt(EntryState)
        /// Both sides changed the content: the path's merge policy makes the content; the rest
        /// of the entry is this merged state.
        case mergeContent(EntryState)
        /// The local change gives way: the container's version is applied locally.
        case takeRemote
        /// Keep both: our entry takes a conflict name (and is uploaded under it).
        case renameAside
        /// Upload our queued change to the entry holding the name first, then retry.
        case letNameHolderGoFirst
        /// Re-create the remotely deleted parent (with our entries in it), then retry.
        case recreateParent
        /// The parent is simply not committed yet: retry after it.
        case waitForParent
        /// Upload this mount's own queued deletes below the directory first (deepest first),
        /// then retry.
        case uploadOwnDeletesFirst
        /// Upload every other queued change first, then retry.
        case uploadOthersFirst
        /// Another queued change must go first but cannot from this deep in nested uploads:
        /// back to the queue, ready at once, decided again from the top. How deep a chain of
        /// new folders is never turns into a conflict copy or a lost change.
        case retryOnItsOwn
        /// Retry after the other queued changes.
        case waitForOthers
    }

    /// Rounds a refused directory delete or move waits for other queued changes before giving way.
    static let maxRoundsWaited = 3

    static func decide(_ situation: Situation) -> Action {
        switch situation.refusal {
        case .changed(let current):
            return decideChanged(situation, current: current)
        case .nameTaken(let freedByQueuedChange):
            // Two new entries with the same name, or a rename onto a name taken meanwhile: both kept.
            guard freedByQueuedChange else { return .renameAside }
            return situation.mayNestUploads ? .letNameHolderGoFirst : .retryOnItsOwn
        case .parentMissing(let deleted):
            // A file added in a directory deleted on the other side: the directory comes back.
            return deleted ? .recreateParent : .waitForParent
        case .directoryNotEmpty where situation.local == .delete && situation.ownDeletesBelowQueued:
            // A directory changed before what was in it was removed is queued ahead of those
            // deletes (oldest first): they go first, deepest first, and it is empty then.
            return .uploadOwnDeletesFirst
        case .directoryNotEmpty, .wouldCreateCycle:
            // Our delete of a directory that got new entries remotely, or concurrent moves that
            // would make a cycle. Our own queued changes may be what is missing; if not, the
            // container's version wins (the directory comes back with the new entries; the
            // remote placement stays) — nothing is lost, no cycle is made.
            if !situation.othersTried { return situation.mayNestUploads ? .uploadOthersFirst : .retryOnItsOwn }
            // They may be waiting for this one in turn (a rename onto the name of this very
            // folder, say): after a few rounds the container's version wins anyway.
            if situation.othersQueued && situation.roundsWaited < maxRoundsWaited { return .waitForOthers }
            return .takeRemote
        }
    }

    private static func decideChanged(_ situation: Situation, current: RemoteEntry?) -> Action {
        guard let current else {
            // The container has no such entry (any more): ours is created afresh.
            return situation.local == .delete ? .finished : .commitOnTop
        }
        switch situation.local {
        case .delete:
            if current.isDeleted { return .finished }  // deleted on both sides
            // Our own earlier commit, changed again since: delete on top of it. Another
            // device's edit against our delete: the edit survives.
            return current.device == situation.localDevice ? .commitOnTop : .takeRemote
        case .put(let ours):
            if current.isDeleted { return .commitOnTop }  // edit against delete: the edit survives
            if current.device == situation.localDevice {
                return current.state == ours ? .finished : .commitOnTop
            }
            let merged = mergeFields(
                base: situation.base, baseManifest: situation.baseManifest ?? situation.base?.manifest, ours: ours,
                theirs: current.state, oursWinsTies: situation.localDevice < current.device)
            if merged.contentConflict { return .mergeContent(merged.state) }
            if merged.state == current.state { return .takeRemote }
            return .adopt(merged.state)
        }
    }

    /// Merges two versions of an entry field by field against their base: a field changed on one
    /// side only takes that side's value; changed on both to different values, the later mtime
    /// wins for `mtime`, keys of `xattrs` merge one by one, and for the placement (parent and
    /// name), mode, symlink target and an xattr key the side of the device whose ID sorts first
    /// wins (`oursWinsTies`) — a fixed rule, so the result does not depend on timing. Content
    /// (manifest and size) changed on both sides is reported as `contentConflict` (the merged
    /// state then carries the remote content). An unknown base counts as changed on both sides.
    static func mergeFields(
        base: EntryState?, baseManifest: [ChunkRef]? = nil, ours: EntryState, theirs: EntryState, oursWinsTies: Bool
    ) -> (state: EntryState, contentConflict: Bool) {
        func pick<Value: Equatable>(_ field: (EntryState) -> Value, tie: (Value, Value) -> Value) -> Value {
            let mine = field(ours)
            let other = field(theirs)
            if mine == other { return mine }
            guard let base else { return tie(mine, other) }
            let old = field(base)
            if mine == old { return other }
            if other == old { return mine }
            return tie(mine, other)
        }
        func fixedRule<Value>(_ mine: Value, _ other: Value) -> Value { oursWinsTies ? mine : other }
        var state = theirs
        let placement = pick({ Placement(parent: $0.parent, name: $0.name) }, tie: fixedRule)
        state.parent = placement.parent
        state.name = placement.name
        state.mode = pick(\.mode, tie: fixedRule)
        state.mtime = pick(\.mtime, tie: max)
        state.symlinkTarget = pick(\.symlinkTarget, tie: fixedRule)
        state.xattrs = mergeXattrs(
            base: base?.xattrs, ours: ours.xattrs, theirs: theirs.xattrs, oursWinsTies: oursWinsTies)
        // Content compares by manifest (the size follows from it); the base's manifest is known
        // even when its metadata is not.
        let baseContent = baseManifest ?? base?.manifest
        var contentConflict = false
        if ours.manifest != theirs.manifest {
            if let baseContent, baseContent == theirs.manifest {
                state.manifest = ours.manifest
                state.size = ours.size
            } else if baseContent == nil || baseContent != ours.manifest {
                contentConflict = ours.kind == .file
            }
        }
        if contentConflict { state.mtime = max(ours.mtime, theirs.mtime) }
        return (state, contentConflict)
    }

    private static func mergeXattrs(
        base: [String: [UInt8]]?, ours: [String: [UInt8]], theirs: [String: [UInt8]], oursWinsTies: Bool
    ) -> [String: [UInt8]] {
        var merged: [String: [UInt8]] = [:]
        for key in Set(ours.keys).union(theirs.keys).union(base.map { Set($0.keys) } ?? []) {
            let mine = ours[key]
            let other = theirs[key]
            let value: [UInt8]?
            if mine == other {
                value = mine
            } else if let base, base[key] == mine {
                value = other
            } else if let base, base[key] == other {
                value = mine
            } else {
                value = oursWinsTies ? mine : other
            }
            if let value { merged[key] = value }
        }
        return merged
    }

    private struct Placement: Equatable {
        var parent: FileID?
        var name: [UInt8]
    }
}
