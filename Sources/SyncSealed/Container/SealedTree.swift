import SyncBackend

/// The decrypted tree of a sealed container, as the ledger vouches for it: every entry the engine
/// may see (live or tombstone) with its stored version, and the live children of each folder by
/// name. The wrapper decides commits against it (`CommitRules`, through `PlannedLookup`) because
/// the server cannot: it sees no parents and no names.
struct SealedTree {
    private(set) var entries: [FileID: RemoteEntry] = [:]
    /// Live children by folder and name. More than one ID in a slot is a broken tree (`problem`).
    private var children: [FileID: [[UInt8]: [FileID]]] = [:]

    /// The entry as clients see it: the stored one, or the implicit root.
    func entry(_ id: FileID) -> RemoteEntry? {
        entries[id] ?? (id == .root ? CommitRules.implicitRoot : nil)
    }

    /// Replaces (or adds) `entry`.
    mutating func set(_ entry: RemoteEntry) {
        if let old = entries[entry.id], !old.isDeleted, let parent = old.state.parent {
            children[parent]?[old.state.name]?.removeAll { $0 == entry.id }
            if children[parent]?[old.state.name]?.isEmpty == true { children[parent]?[old.state.name] = nil }
            if children[parent]?.isEmpty == true { children[parent] = nil }
        }
        entries[entry.id] = entry
        if !entry.isDeleted, let parent = entry.state.parent {
            children[parent, default: [:]][entry.state.name, default: []].append(entry.id)
        }
    }

    func liveChild(of parent: FileID, named name: [UInt8]) -> RemoteEntry? {
        children[parent]?[name]?.first.flatMap { entries[$0] }
    }

    /// The live children of `folder` (each slot's first).
    func liveChildren(of folder: FileID) -> [FileID] {
        children[folder]?.values.compactMap(\.first) ?? []
    }

    func hasLiveChildren(_ folder: FileID) -> Bool { children[folder]?.isEmpty == false }

    /// What is wrong with the tree around `ids` (entries a read changed), or nil: a live entry
    /// whose parent is not a live folder, two live entries with one name in a folder, a folder
    /// that is its own ancestor, a deleted folder with live children.
    func problem(around ids: [FileID]) -> String? {
        for id in ids {
            guard let entry = entries[id] else { continue }
            if entry.isDeleted {
                if entry.state.kind == .directory, hasLiveChildren(id) {
                    return "deleted folder \(id) has live entries"
                }
                continue
            }
            guard let parent = entry.state.parent else { continue }
            guard let folder = self.entry(parent), !folder.isDeleted, folder.state.kind == .directory else {
                return "entry \(id) is in \(parent), which is not a live folder"
            }
            if (children[parent]?[entry.state.name]?.count ?? 0) > 1 {
                return "two live entries share a name in \(parent)"
            }
            if entry.state.kind != .directory, hasLiveChildren(id) {
                return "entry \(id) has children but is no folder"
            }
            var next: FileID? = parent
            var steps = 0
            while let current = next, current != .root {
                if current == id { return "folder \(id) is inside itself" }
                steps += 1
                if steps > entries.count { return "the parents above \(id) loop" }
                next = entries[current]?.state.parent
            }
        }
        return nil
    }
}

/// The tree as a batch's earlier changes leave it: `CommitRules`' lookups over a `SealedTree`
/// and the changes decided so far, without copying the tree.
struct PlannedLookup: CommitLookup {
    let tree: SealedTree
    private(set) var changed: [FileID: RemoteEntry] = [:]

    init(tree: SealedTree) { self.tree = tree }

    mutating func record(_ entry: RemoteEntry) { changed[entry.id] = entry }

    func storedEntry(_ id: FileID) -> RemoteEntry? { changed[id] ?? tree.entries[id] }

    func liveChild(of parent: FileID, named name: [UInt8]) -> RemoteEntry? {
        if let moved = changed.values.first(where: {
            !$0.isDeleted && $0.state.parent == parent && $0.state.name == name
        }) {
            return moved
        }
        guard let holder = tree.liveChild(of: parent, named: name) else { return nil }
        guard let now = changed[holder.id] else { return holder }
        return !now.isDeleted && now.state.parent == parent && now.state.name == name ? now : nil
    }

    func hasLiveChildren(_ folder: FileID) -> Bool {
        if changed.values.contains(where: { !$0.isDeleted && $0.state.parent == folder }) { return true }
        return tree.liveChildren(of: folder).contains { id in
            guard let now = changed[id] else { return true }
            return !now.isDeleted && now.state.parent == folder
        }
    }

    /// The server checks the chunks (of the opaque manifest) when it commits.
    func missingChunks(_ hashes: [ChunkHash]) -> [ChunkHash] { [] }
}
