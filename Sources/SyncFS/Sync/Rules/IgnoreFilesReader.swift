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

    /// At most this many synced ignore files are read, and at most `budgetBytes` of them in all
    /// (doc/SEMANTICS.md): a hostile container's thousands of large files cost no more. The
    /// files beyond are a rules error and count as unreadable (what is below them waits).
    static let budgetFiles = 1_000
    static let budgetBytes = 8 << 20
    static let beyondBudget =
        "beyond the budget of synced ignore files (1,000 files, 8 MiB in all): this and later files are not read"

    /// Reads every synced ignore file now and installs them; changed rules let the changes held
    /// as ignored be looked at again, and a read that ends the pending state lets the waiting
    /// ones go. A file that cannot be read now, or is open for writing (read when it is closed),
    /// keeps the text last read of it; without one its folder counts as unreadable.
    func read() {
        let generation = fileSystem.rulesWatch.touchGeneration
        guard fileSystem.ignores.settings.synced else {
            fileSystem.ignores.setSynced([:], unreadable: [], readGeneration: generation)
            return
        }
        let known = fileSystem.ignores.current.syncedTexts
        var texts: [String: String] = [:]
        var unreadable: Set<String> = []
        var errors: [String: String] = [:]
        var budget = (files: Self.budgetFiles, bytes: Self.budgetBytes)
        var beyondBudget = 0
        for found in findFiles().sorted(by: { $0.folder.count < $1.folder.count }) {
            let path = IgnoreSource.synced(folder: found.folder).fileName(localFile: nil)
            guard budget.files > 0, budget.bytes > 0 else {
                // One error for them all (a hostile container's thousands would flood `status`).
                if beyondBudget == 0 { errors[path] = Self.beyondBudget }
                beyondBudget += 1
                unreadable.insert(found.folder)
                continue
            }
            budget.files -= 1
            guard let text = readText(found, limit: min(Self.largestFile, budget.bytes), path: path, errors: &errors)
            else {
                if let last = known[found.folder] {
                    texts[found.folder] = last
                } else {
                    unreadable.insert(found.folder)
                }
                continue
            }
            budget.bytes -= text.utf8.count
            texts[found.folder] = text
            if let message = RulesWatch.message(IgnoreFile(parsing: text).problems) { errors[path] = message }
        }
        note(errors)
        fileSystem.rulesWatch.noteIgnoreFiles(found: !texts.isEmpty || !unreadable.isEmpty)
        if fileSystem.ignores.setSynced(texts, unreadable: unreadable, readGeneration: generation) {
            logger.info("synced ignore files read: \(texts.count) in force, \(unreadable.count) not readable yet")
            fileSystem.outbox.releaseHeld()
        } else {
            fileSystem.outbox.releaseWaiting()
        }
    }

    /// The text of `found` now, nil if it cannot be read now (an error is recorded for a file
    /// here that cannot be read) or is open for writing.
    private func readText(_ found: Found, limit: Int, path: String, errors: inout [String: String]) -> String? {
        if found.openForWriting { return nil }
        if found.placeholder && !reachability.isOnline { return nil }
        guard let bytes = fileSystem.residency.readSmallFile(found.ino, limit: limit) else {
            if limit < Self.largestFile {
                errors[path] = Self.beyondBudget
            } else if !found.placeholder {
                errors[path] = "cannot be read, or larger than 1 MiB: its lines are not used"
            }
            return nil
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private struct Found {
        var folder: String
        var ino: InodeNumber
        var placeholder: Bool
        var openForWriting: Bool
    }

    /// Every live `.syncfs-ignore` file of the tree, by folder.
    private func findFiles() -> [Found] {
        let name = FileName(IgnoreRules.syncedFileName)
        return fileSystem.live.transact { tree in
            var found: [Found] = []
            var stack: [(Node, String)] = []
            if let root = tree.nodes[.root] { stack.append((root, "")) }
            while let (folder, path) = stack.popLast() {
                for (childName, ino) in folder.children {
                    guard let node = tree.nodes[ino], !node.isUnlinked else { continue }
                    if node.kind == .directory {
                        let display = childName.description
                        stack.append((node, path.isEmpty ? display : path + "/" + display))
                    } else if node.kind == .file && childName == name {
                        found.append(
                            Found(
                                folder: path, ino: ino, placeholder: node.isPlaceholder,
                                openForWriting: node.openWriters > 0))
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
