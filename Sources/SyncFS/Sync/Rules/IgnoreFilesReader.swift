import Logging
import SyncMerge
import Synchronization

/// Reads the synced `.syncfs-ignore` files of the whole tree into the mount's ignore rules
/// (`MountIgnores`), on the rules thread, each time an entry with that name changed here or
/// arrived (and once at the start). A placeholder is downloaded at once; one that cannot be read
/// yet (the container is away) is recorded as unreadable, so entries never uploaded below its
/// folder wait for it rather than being uploaded by guess. A file's lines that do not parse are
/// skipped and shown by `status` as a rules error.
final class IgnoreFilesReader: Sendable {
    /// The largest ignore file read; a larger one is an error (its lines are not used).
    static let largestFile = 1 << 20

    private let fileSystem: SyncFileSystem
    private let reachability: Reachability
    private let logger: Logger
    /// The files with an error recorded in the rules watch (cleared when they are gone).
    private let withErrors = Mutex<Set<String>>([])

    init(fileSystem: SyncFileSystem, reachability: Reachability, logger: Logger) {
        self.fileSystem = fileSystem
        self.reachability = reachability
        self.logger = logger
    }

    /// Reads every synced ignore file now and installs them; changed rules let the changes held
    /// as ignored be looked at again.
    func read() {
        guard fileSystem.ignores.settings.synced else { return }
        var texts: [String: String] = [:]
        var unreadable: Set<String> = []
        var errors: [String: String] = [:]
        for found in findFiles() {
            let path = IgnoreSource.synced(folder: found.folder).fileName(localFile: nil)
            if found.placeholder && !reachability.isOnline {
                unreadable.insert(found.folder)
                continue
            }
            guard let bytes = fileSystem.residency.readSmallFile(found.ino, limit: Self.largestFile) else {
                if found.placeholder {
                    unreadable.insert(found.folder)
                } else {
                    errors[path] = "cannot be read, or larger than 1 MiB: its lines are not used"
                }
                continue
            }
            let text = String(decoding: bytes, as: UTF8.self)
            texts[found.folder] = text
            if let message = RulesWatch.message(IgnoreFile(parsing: text).problems) { errors[path] = message }
        }
        note(errors)
        fileSystem.rulesWatch.noteIgnoreFiles(found: !texts.isEmpty || !unreadable.isEmpty)
        if fileSystem.ignores.setSynced(texts, unreadable: unreadable) {
            logger.info("synced ignore files read: \(texts.count) in force, \(unreadable.count) not readable yet")
            fileSystem.outbox.releaseHeld()
        }
    }

    private struct Found {
        var folder: String
        var ino: InodeNumber
        var placeholder: Bool
    }

    /// Every live `.syncfs-ignore` file of the tree, by folder.
    private func findFiles() -> [Found] {
        let name = Array(IgnoreRules.syncedFileName.utf8)
        return fileSystem.live.transact { tree in
            var found: [Found] = []
            var stack: [(Node, String)] = []
            if let root = tree.nodes[.root] { stack.append((root, "")) }
            while let (folder, path) = stack.popLast() {
                for (childName, ino) in folder.children {
                    guard let node = tree.nodes[ino], !node.isUnlinked else { continue }
                    if node.kind == .directory {
                        let display = String(decoding: childName.bytes, as: UTF8.self)
                        stack.append((node, path.isEmpty ? display : path + "/" + display))
                    } else if node.kind == .file && childName.bytes == name {
                        found.append(Found(folder: path, ino: ino, placeholder: node.isPlaceholder))
                    }
                }
            }
            return found
        }
    }

    /// Records the files' errors for `status` (logged once per distinct error), and clears the
    /// errors of files that parse again or are gone.
    private func note(_ errors: [String: String]) {
        let previous = withErrors.withLock { known in
            defer { known = Set(errors.keys) }
            return known
        }
        for path in previous where errors[path] == nil { _ = fileSystem.rulesWatch.record(path: path, error: nil) }
        for (path, message) in errors where fileSystem.rulesWatch.record(path: path, error: message) {
            logger.warning("\(path): \(message) (lines skipped)")
        }
    }
}
