import SyncBackend

/// Selective sync: folders kept off this device (`exclude`) and brought back (`include`);
/// doc/SEMANTICS.md, "Selective sync", has the rules. The tree's side is
/// `Namespace+Exclusions` and `TreeTransaction+Exclusions`; this type checks a request, frees
/// the folder's local content and answers.
///
/// Excluding never changes the container and queues nothing: it refuses while anything below
/// is open or holds changes not yet uploaded (they would be out of reach until `include`).
final class SelectiveSync: Sendable, HoldsTheTree {
    let parts: FolderParts
    private let residency: ContentResidency
    private var eviction: Eviction { residency.eviction }

    init(parts: FolderParts, residency: ContentResidency) {
        self.parts = parts
        self.residency = residency
    }

    /// Why a request was refused; `retryable`: it may succeed later (after uploads or closes).
    struct Refusal: Error, Equatable {
        var message: String
        var retryable = false
    }

    /// What `exclude` did: the folder's path and the local content it freed.
    struct Excluded: Equatable {
        var path: String
        var files = 0
        var bytes: Int64 = 0
    }

    /// Takes the folder at `path` (below the mount point) off this device: it disappears from
    /// the mount, its local content is freed, and the container's changes below it are applied
    /// out of sight. Pins below it stay (for when it comes back).
    func exclude(_ path: String) throws(Refusal) -> Excluded {
        let components = try Self.components(of: path)
        guard !components.isEmpty else { throw Refusal(message: "the mount's root cannot be excluded") }
        // A download whose bytes have all arrived ends first, so its file is freed too.
        let found = live.transact { tree -> InodeNumber? in
            do throws(FSError) {
                return try tree.node(atPath: components.joined(separator: "/")).ino
            } catch {
                return nil  // answered below, in the transaction that excludes
            }
        }
        if let found { eviction.waitForFinishingDownloads(below: found) }
        return try live.transact { tree throws(Refusal) -> Excluded in
            let folder: Node
            do throws(FSError) {
                folder = try tree.node(atPath: components.joined(separator: "/"))
            } catch {
                throw Refusal(message: "no such folder")
            }
            guard folder.kind == .directory else {
                throw Refusal(message: "not a folder (only folders can be excluded; evict frees a file's content)")
            }
            var nodes: [Node] = []
            Self.collectAll(below: folder, in: tree) { nodes.append($0) }
            // Ignored entries exist only here: excluding would free their content, so they go first.
            let localOnly = nodes.filter { outbox.isHeld($0.fileID) }.count
            guard localOnly == 0 else {
                throw Refusal(
                    message:
                        "\(localOnly) ignored \(localOnly == 1 ? "entry" : "entries") below \(localOnly == 1 ? "exists" : "exist") only on this "
                        + "device (never uploaded); move or delete them first (`syncfs-mount status --ignored` lists them)"
                )
            }
            let pending = nodes.filter { outbox.isPending($0.fileID) || $0.hasUnrecordedWrites }.count
            guard pending == 0 else {
                throw Refusal(
                    message: "\(pending) \(pending == 1 ? "change" : "changes") below not uploaded yet; "
                        + "wait for sync or run `syncfs-mount sync` first",
                    retryable: true)
            }
            guard tree.bases[folder.fileID].map({ $0.version > 0 }) == true else {
                throw Refusal(message: "the folder is not in the container yet; wait for sync", retryable: true)
            }
            let open = nodes.filter { $0.openCount > 0 }.count
            guard open == 0 else {
                throw Refusal(
                    message: "\(open) open below (EBUSY); close \(open == 1 ? "it" : "them") first", retryable: true)
            }
            var excluded = Excluded(path: tree.displayPath(of: folder))
            for file in nodes where file.kind == .file && !file.isPlaceholder {
                excluded.files += 1
                excluded.bytes += file.size.load(ordering: .relaxed)
            }
            for kept in eviction.evictForExclusion(below: folder, tree: &tree) {
                logger.info("excluding \(excluded.path): \(kept.path) keeps its content for now: it \(kept.reason)")
            }
            tree.hideExcludedFolder(folder)
            return excluded
        }
    }

    /// Brings the excluded folder at `path` (as `excluded` lists it) back: its entries appear at
    /// once, as placeholders. Returns its path.
    @discardableResult
    func include(_ path: String) throws(Refusal) -> String {
        let wanted = try Self.components(of: path).joined(separator: "/")
        return try live.transact { tree throws(Refusal) -> String in
            let listed = tree.excludedPaths()
            guard let match = listed.first(where: { $0.path == wanted }), let folder = tree.node(withID: match.id)
            else {
                let known =
                    listed.isEmpty ? "nothing is excluded" : "excluded: " + listed.map(\.path).joined(separator: ", ")
                throw Refusal(message: "not excluded (\(known))")
            }
            guard tree.showExcludedFolder(folder, host: deviceName) != nil else {
                throw Refusal(message: "its parent folder is no longer here; it stays excluded")
            }
            return match.path
        }
    }

    /// The excluded folders' current paths, sorted.
    func excludedPaths() -> [String] {
        live.transact { tree in tree.excludedPaths().map(\.path) }
    }

    /// `path`'s components ("." and empty ones dropped); ".." is refused.
    private static func components(of path: String) throws(Refusal) -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init).filter { $0 != "." }
        guard !parts.contains("..") else { throw Refusal(message: "a path with \"..\" is not accepted") }
        return parts
    }

    /// Every node at or below `node` that is in sight from it (files, folders, symlinks).
    private static func collectAll(below node: Node, in tree: TreeTransaction, _ body: (Node) -> Void) {
        var stack = [node]
        while let current = stack.popLast() {
            body(current)
            for child in current.children.values { if let next = tree.nodes[child] { stack.append(next) } }
        }
    }
}

extension SyncFileSystem {
    /// `exclude`, `include` and the excluded folders (`SelectiveSync`).
    var selectiveSync: SelectiveSync { SelectiveSync(parts: parts, residency: residency) }
}
