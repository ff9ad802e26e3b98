import SyncBackend
import SyncMerge

extension UploadRecords {
    /// What the ignore rules say of the queued change of `id` now (`IgnoreDecision`). Costs one
    /// match of the local path; the container's path is read from the state database only when
    /// the local path is ignored or the entry was deleted here and the container has it.
    ///
    /// Never by guess: while the synced ignore files are not read yet (the start, or one touched
    /// since the last read) every change waits; so does any entry below a folder whose ignore
    /// file cannot be read and has no text read before. A "wait" is told to the outbox, so the
    /// `hold` that follows counts the change as pending, not ignored.
    func ignoreVerdict(_ id: FileID) -> IgnoreVerdict {
        let verdict = decideIgnoreVerdict(id)
        if case .waiting = verdict { outbox.noteWaiting(id) }
        return verdict
    }

    private func decideIgnoreVerdict(_ id: FileID) -> IgnoreVerdict {
        let ignores = self.ignores.current
        if ignores.rulesPending(touches: live.rulesWatch.touchGeneration) { return .waiting(folder: "") }
        guard !ignores.ignoresNothing else { return .upload }
        let rules = ignores.rules
        let (local, isDirectory, committed) = live.transact { tree -> (String?, Bool, Bool) in
            let committed = (tree.bases[id]?.version ?? 0) > 0
            guard let node = tree.node(withID: id), !node.isUnlinked else { return (nil, false, committed) }
            guard node.ino != .root else { return ("", true, committed) }
            return (tree.displayPath(of: node), node.kind == .directory, committed)
        }
        if local == "" { return .upload }
        if let local, let folder = ignores.unreadableFolder(above: local) { return .waiting(folder: folder) }
        guard committed else {
            return IgnoreDecision.decide(local: local, container: nil, isDirectory: isDirectory, rules: rules)
        }
        if let local, !rules.isIgnored(local, isDirectory: isDirectory) { return .upload }
        guard let (container, containerIsDirectory) = containerPath(of: id) else {
            // Committed, but where is not known: never delete by guess; a local delete goes.
            guard let local, let match = rules.match(local, isDirectory: isDirectory) else { return .upload }
            return .held(match)
        }
        if let folder = ignores.unreadableFolder(above: container) { return .waiting(folder: folder) }
        return IgnoreDecision.decide(
            local: local, container: container, isDirectory: local == nil ? containerIsDirectory : isDirectory,
            rules: rules)
    }

    /// The path the container had `id` at when this mount last synced it (its sync base and those
    /// of its folders), and whether it is a folder; nil if a base state is missing.
    func containerPath(of id: FileID) -> (String, Bool)? {
        var names: [String] = []
        var current = id
        var isDirectory = false
        while current != .root, names.count < 4096 {
            let recorded: EntryState?
            do {
                recorded = try store.baseState(of: current)
            } catch {
                // Not known: the caller holds the change rather than delete by guess.
                logger.warning("the container's path of \(id.hex) cannot be read: \(error)")
                return nil
            }
            guard let state = recorded, let parent = state.parent else { return nil }
            if current == id { isDirectory = state.kind == .directory }
            names.append(String(decoding: state.name, as: UTF8.self))
            current = parent
        }
        return (names.reversed().joined(separator: "/"), isDirectory)
    }
}
