import SyncBackend

/// The deleted entries of a container, arranged the way `trash` shows them and `restore` brings
/// them back (doc/SEMANTICS.md "Version history and the trash"). Pure: built from the tombstones
/// the container listed and the paths of the entries live in this mount.
///
/// - A deleted folder takes with it the entries **deleted together** with it: its deleted
///   children whose deletion reached the container no more than `togetherWindow` before the
///   folder's own (deleting a folder deletes what is in it first), recursively. Those are
///   listed as part of the folder and restored with it; a child deleted earlier is an item of
///   its own.
/// - The path of a deleted entry is its last name below its parent: a live entry's path in this
///   mount, or a deleted parent's path, recursively; nil when an ancestor is neither (gone for
///   good, or not applied here yet).
struct TrashIndex {
    static let togetherWindow: Int64 = 10 * 60 * 1_000_000_000

    /// Every tombstone, by entry.
    let byID: [FileID: HistoricVersion]
    private let children: [FileID: [FileID]]
    private let paths: [FileID: String]

    init(_ tombstones: [HistoricVersion], livePath: (FileID) -> String?) {
        var byID: [FileID: HistoricVersion] = [:]
        for tombstone in tombstones where tombstone.entry.isDeleted {
            if let known = byID[tombstone.entry.id], known.entry.version >= tombstone.entry.version { continue }
            byID[tombstone.entry.id] = tombstone
        }
        var children: [FileID: [FileID]] = [:]
        for (id, tombstone) in byID {
            if let parent = tombstone.entry.state.parent { children[parent, default: []].append(id) }
        }
        for key in children.keys {
            children[key]?.sort { byID[$0]!.entry.version > byID[$1]!.entry.version }
        }
        self.byID = byID
        self.children = children
        var paths: [FileID: String] = [:]
        for id in byID.keys { Self.resolve(id, byID: byID, livePath: livePath, into: &paths) }
        self.paths = paths
    }

    /// Walks up from `id` to a known path (the root, a live entry, a deleted entry resolved
    /// before) without recursion, and records the path of every deleted entry on the way; a
    /// chain that ends unknown or loops (a hostile container) records nothing.
    private static func resolve(
        _ id: FileID, byID: [FileID: HistoricVersion], livePath: (FileID) -> String?, into paths: inout [FileID: String]
    ) {
        var chain: [HistoricVersion] = []
        var seen: Set<FileID> = []
        var current = id
        var base: String?
        while paths[current] == nil, let tombstone = byID[current], seen.insert(current).inserted {
            chain.append(tombstone)
            guard let parent = tombstone.entry.state.parent else { return }
            if parent == .root {
                base = ""
                break
            }
            if byID[parent] == nil {
                base = livePath(parent)
                break
            }
            current = parent
        }
        if base == nil, let known = paths[current] { base = known }
        guard var path = base else { return }
        for tombstone in chain.reversed() {
            let name = String(decoding: tombstone.entry.state.name, as: UTF8.self)
            path = path.isEmpty ? name : path + "/" + name
            paths[tombstone.entry.id] = path
        }
    }

    /// The path the deleted entry had, nil when an ancestor is unknown here.
    func path(of id: FileID) -> String? { paths[id] }

    /// Whether `child` was deleted together with its deleted parent (and so is restored with it).
    func wasDeletedWithParent(_ child: FileID) -> Bool {
        guard let tombstone = byID[child], let parent = tombstone.entry.state.parent,
            let folder = byID[parent]
        else { return false }
        let deletedAt = tombstone.committedAt
        return deletedAt <= folder.committedAt && folder.committedAt - deletedAt <= Self.togetherWindow
    }

    /// The items `trash` lists: deleted entries not deleted together with a deleted parent,
    /// newest deletion first.
    var items: [HistoricVersion] {
        byID.values.filter { !wasDeletedWithParent($0.entry.id) }.sorted { $0.entry.version > $1.entry.version }
    }

    /// `id` and the entries deleted together with it, parents before children.
    func deletedTogether(with id: FileID) -> [HistoricVersion] {
        guard let first = byID[id] else { return [] }
        var result = [first]
        var index = 0
        var seen: Set<FileID> = [id]
        while index < result.count {
            let folder = result[index].entry.id
            index += 1
            for child in children[folder] ?? [] where wasDeletedWithParent(child) && seen.insert(child).inserted {
                result.append(byID[child]!)
            }
        }
        return result
    }

    /// The newest deleted entry whose path is `path`.
    func entry(atPath path: String) -> HistoricVersion? {
        byID.values.filter { paths[$0.entry.id] == path }.max { $0.entry.version < $1.entry.version }
    }
}
