import Logging
import SyncMerge

/// The rules file's errors, known when it is saved or arrives (`RulesWatch`), not only when a
/// merge reads it: shown by `status`, published as `rules-error`, logged once per distinct error.
/// Runs on the rules thread; merges report what they read through `noteRules` too.
final class RulesChecker: Sendable {
    /// The largest rules file read.
    static let largestRulesFile = 1 << 20

    private let fileSystem: SyncFileSystem
    private let run: EngineRun
    private let reachability: Reachability
    private let logger: Logger
    /// The synced ignore files, read on the same thread and at the same touches.
    let ignoreFiles: IgnoreFilesReader

    init(fileSystem: SyncFileSystem, run: EngineRun, reachability: Reachability, logger: Logger) {
        self.fileSystem = fileSystem
        self.run = run
        self.reachability = reachability
        self.logger = logger
        ignoreFiles = IgnoreFilesReader(fileSystem: fileSystem, reachability: reachability, logger: logger)
    }

    /// The rules thread: reads the rules and the synced ignore files again each time an entry with
    /// either name changed (and once at the start), until the engine stops.
    func runChecks() {
        let watch = fileSystem.rulesWatch
        while run.isRunning {
            guard watch.waitForTouch(), run.isRunning else { continue }
            check()
            ignoreFiles.read()
        }
    }

    /// Reads and parses the root's rules file now. A file that cannot be read now (not
    /// downloaded while the container is away: no download is tried then, so no failed read
    /// shows; or its download failed) keeps the error known so far; it is read again on its next
    /// change or download, or when the container answers again.
    func check() {
        guard let ino = try? fileSystem.lookup(path: MergeRules.fileName) else {
            noteRules(problems: [])
            return
        }
        let placeholder = fileSystem.live.transact { tree in tree.nodes[ino]?.isPlaceholder ?? false }
        if placeholder && !reachability.isOnline { return }
        guard let text = fileSystem.residency.readSmallFile(ino, limit: Self.largestRulesFile) else { return }
        noteRules(problems: MergeRules(parsing: String(decoding: text, as: UTF8.self)).problems)
    }

    /// The rules of `.syncfs-rules` at the folder's root for a merge (downloaded if needed), or
    /// the defaults. Lines that do not parse are skipped (and recorded: `noteRules`). A rules
    /// file that exists but cannot be read fails the merge (it is retried), so a merge never
    /// ignores the user's rules.
    func rulesForMerge() throws(SyncFailure) -> MergeRules {
        guard let ino = try? fileSystem.lookup(path: MergeRules.fileName) else { return .defaults }
        guard let text = fileSystem.residency.readSmallFile(ino, limit: Self.largestRulesFile) else {
            // Never merge by the defaults what the user's rules may say otherwise: wait.
            throw .local(
                "\(MergeRules.fileName) cannot be read (not downloaded, or larger than 1 MiB); the merge waits for it")
        }
        let rules = MergeRules(parsing: String(decoding: text, as: UTF8.self))
        // Logged (once per distinct error) and shown by `status` through the rules watch.
        noteRules(problems: rules.problems)
        return rules
    }

    /// Records what a read of the rules file found; a new error is logged (each line once) and
    /// published as `rules-error`, not again until it changes.
    func noteRules(problems: [RuleProblem]) {
        let path = MergeRules.fileName
        let message = RulesWatch.message(problems)
        guard fileSystem.rulesWatch.record(path: path, error: message), let message else { return }
        for problem in problems {
            logger.warning("\(path) line \(problem.line): \(problem.message) (line ignored)")
        }
        fileSystem.changeEvents.publish(
            ChangeEvent(kind: .rulesError, path: path, origin: nil, fileID: nil, type: .file, message: message))
    }
}
