import SyncMerge

/// The rules file's errors, known when it is saved or arrives (`RulesWatch`), not only when a
/// merge reads it: shown by `status`, published as `rules-error`, logged once per distinct error.
extension SyncEngine {
    /// The rules thread: reads the rules again each time an entry with the rules file's name
    /// changed (and once at the start), until the engine stops.
    func runRulesChecker() {
        let watch = fileSystem.rulesWatch
        while isRunning {
            guard watch.waitForTouch(), isRunning else { continue }
            checkRules()
        }
    }

    /// Reads and parses the root's rules file now. A file that cannot be read now (not
    /// downloaded while the container is away: no download is tried then, so no failed read
    /// shows; or its download failed) keeps the error known so far; it is read again on its next
    /// change or download, or when the container answers again.
    func checkRules() {
        guard let ino = try? fileSystem.lookup(path: MergeRules.fileName) else {
            noteRules(problems: [])
            return
        }
        let placeholder = fileSystem.live.transact { tree in tree.nodes[ino]?.isPlaceholder ?? false }
        if placeholder && !isOnline { return }
        guard let text = fileSystem.residency.readSmallFile(ino, limit: Self.largestRulesFile) else { return }
        noteRules(problems: MergeRules(parsing: String(decoding: text, as: UTF8.self)).problems)
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
