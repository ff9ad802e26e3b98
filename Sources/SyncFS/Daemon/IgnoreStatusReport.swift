import SyncBackend
import SyncMerge

/// What `status` shows of the ignore rules (doc/SEMANTICS.md, "Ignored paths on a mount").
public struct IgnoreStatus: Codable, Sendable, Equatable {
    /// Local changes the uploader holds as ignored (entries local to this mount, and changes of
    /// entries the container keeps as they are).
    public var entries: Int
    /// Of them, those a synced `.syncfs-ignore` decides, by that file: another token holder's
    /// rules that keep this mount's changes back are visible.
    public var bySyncedFiles: [IgnoreFileCount]
    /// Synced ignore files that exist but cannot be read yet: entries never uploaded below their
    /// folders wait for them.
    public var unreadableFiles: [String]
    /// `status --ignored`: every ignored path here (a folder stands for what is below it), with
    /// the line that decided it. Nil unless asked for.
    public var paths: [IgnoredPath]?
}

/// How many held changes one synced ignore file decides.
public struct IgnoreFileCount: Codable, Sendable, Equatable {
    /// The file, relative to the mount point ("node/.syncfs-ignore").
    public var file: String
    public var entries: Int
}

/// One ignored path and the line that decided it.
public struct IgnoredPath: Codable, Sendable, Equatable {
    public var path: String
    /// The ignore file ("(defaults)", a synced `.syncfs-ignore` relative to the mount point, or
    /// the local file's path).
    public var file: String
    public var line: Int
    public var pattern: String
}

extension IgnoreSource {
    /// The file a line of this source is in, as `status` names it.
    func fileName(localFile: String?) -> String {
        switch self {
        case .defaults: "(defaults)"
        case .synced(let folder):
            folder.isEmpty ? IgnoreRules.syncedFileName : folder + "/" + IgnoreRules.syncedFileName
        case .local: localFile ?? "(local ignore file)"
        }
    }
}

extension SyncEngine {
    /// The ignore part of `status`; `listing`: with every ignored path (`status --ignored`), a
    /// walk of the tree that does not go below an ignored folder.
    func ignoreStatus(listing: Bool) -> IgnoreStatus {
        let current = fileSystem.ignores.current
        let localFile = current.settings.localPath
        let heldIDs = fileSystem.outbox.heldIDs
        let heldPaths = fileSystem.live.transact { tree in
            heldIDs.compactMap { id -> (String, Bool)? in
                guard let node = tree.node(withID: id), !node.isUnlinked, node.ino != .root else { return nil }
                return (tree.displayPath(of: node), node.kind == .directory)
            }
        }
        var bySynced: [String: Int] = [:]
        for (path, isDirectory) in heldPaths {
            guard let match = current.rules.match(path, isDirectory: isDirectory), match.ignored,
                case .synced = match.source
            else { continue }
            bySynced[match.source.fileName(localFile: localFile), default: 0] += 1
        }
        var status = IgnoreStatus(
            entries: heldIDs.count,
            bySyncedFiles: bySynced.map { IgnoreFileCount(file: $0.key, entries: $0.value) }.sorted {
                $0.file < $1.file
            },
            unreadableFiles: current.unreadable.map {
                IgnoreSource.synced(folder: $0).fileName(localFile: localFile)
            }.sorted())
        if listing { status.paths = ignoredPaths(current.rules, localFile: localFile) }
        return status
    }

    /// Every ignored path of the tree, depth first, in name order.
    private func ignoredPaths(_ rules: IgnoreRules, localFile: String?) -> [IgnoredPath] {
        fileSystem.live.transact { tree in
            var found: [IgnoredPath] = []
            var stack: [(Node, String)] = []
            if let root = tree.nodes[.root] { stack.append((root, "")) }
            while let (folder, folderPath) = stack.popLast() {
                for (name, ino) in folder.children.sorted(by: { $0.key < $1.key })
                    .reversed()
                {
                    guard let node = tree.nodes[ino], !node.isUnlinked else { continue }
                    let display = String(decoding: name.bytes, as: UTF8.self)
                    let path = folderPath.isEmpty ? display : folderPath + "/" + display
                    let isDirectory = node.kind == .directory
                    if let match = rules.match(path, isDirectory: isDirectory), match.ignored {
                        found.append(
                            IgnoredPath(
                                path: path, file: match.source.fileName(localFile: localFile), line: match.line,
                                pattern: match.pattern))
                    } else if isDirectory {
                        stack.append((node, path))
                    }
                }
            }
            return found.sorted { $0.path < $1.path }
        }
    }
}
