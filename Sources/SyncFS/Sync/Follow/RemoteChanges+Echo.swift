import Glibc
import SyncBackend

/// The follower's side of the inotify echo (see `InotifyEcho`): structural remote changes handed
/// to the echo thread, content and attribute changes touched after they were applied. The
/// kernel's side is `SyncFileSystem+Echo`.
extension RemoteChanges {
    // MARK: The follower's side

    /// `applyRemote` with the echo on: structural changes go through the mount, content and
    /// attribute changes are applied and then touched. Falls back to applying directly whenever
    /// the echo cannot do its part. Never holds the namespace lock while calling into the mount.
    func applyRemoteEchoed(_ entry: RemoteEntry, contentFile: String?, force: Bool, echo: InotifyEcho)
        -> RemotePlan
    {
        echo.turn.lock()
        defer { echo.turn.unlock() }
        var application = RemoteApplication(wantsTouch: true)
        let (step, directOutcome) = live.transact { tree -> (EchoStep?, RemotePlan?) in
            let decision = plan(entry, force: force, tree: &tree)
            guard case .apply(let needsContent) = decision, !(needsContent && contentFile == nil) else {
                return (nil, decision)
            }
            if echo.isAvailable, let step = throughStep(for: entry, in: tree) { return (step, nil) }
            return (
                nil,
                applyRemoteLocked(entry, contentFile: contentFile, force: force, tree: &tree, into: &application)
            )
        }
        var outcome: RemotePlan
        if let directOutcome {
            outcome = directOutcome
        } else if let step {
            echo.pending.withLock {
                $0 = .waiting(
                    PendingRemoteChange(entry: entry, step: step) { [self] tree, application in
                        applyRemoteLocked(
                            entry, contentFile: contentFile, force: force, tree: &tree, into: &application)
                    })
            }
            let result = echo.run { echo.perform(step) }
            let handled = echo.pending.withLock { slot -> (RemotePlan, RemoteApplication)? in
                defer { slot = .empty }
                if case .done(let plan, let applied) = slot { return (plan, applied) }
                return nil
            }
            if let handled {
                (outcome, application) = handled
            } else {
                if let result, result != 0 {
                    logger.debug("inotify echo of \(entry.id) failed (errno \(result)); applying directly")
                }
                outcome = live.transact { tree in
                    applyRemoteLocked(entry, contentFile: contentFile, force: force, tree: &tree, into: &application)
                }
            }
        } else {
            outcome = .later
        }
        live.perform(application.invalidations)
        if case .apply = outcome, let touch = application.touch {
            _ = echo.run { echo.perform(touch) }
        }
        return outcome
    }

    /// The VFS call that applies `entry` through the mount, if it is a create, delete or move the
    /// kernel can see as such; nil for changes applied directly (content, attributes, a name taken
    /// by another local entry, a directory that keeps local entries, a location that cannot be
    /// named below the mount).
    private func throughStep(for entry: RemoteEntry, in tree: TreeTransaction) -> EchoStep? {
        let node = tree.node(withID: entry.id).flatMap { $0.isUnlinked ? nil : $0 }
        if entry.isDeleted {
            guard let node, node.ino != .root, node.parent != nil else { return nil }
            if node.kind == .directory && !node.children.isEmpty { return nil }
            return location(of: node, in: tree).map { .remove($0, isDirectory: node.kind == .directory) }
        }
        guard entry.id != .root, let parentID = entry.state.parent, let parent = tree.node(withID: parentID),
            !parent.isUnlinked
        else { return nil }
        let name = FileName(bytes: entry.state.name)
        if let occupant = tree.child(of: parent, named: name), occupant.fileID != entry.id { return nil }
        guard let destination = location(of: parent, in: tree).flatMap({ $0.child(name) }) else { return nil }
        guard let node else {
            return .create(destination, kind: entry.state.kind, target: entry.state.symlinkTarget)
        }
        guard node.parent != parent.ino || node.name != name else { return nil }
        return location(of: node, in: tree).map { .move(from: $0, to: destination) }
    }

    /// The location of `node` below the mount point (the names from the root down), or nil if
    /// it is not attached to the root or a name is not one path component.
    func location(of node: Node, in tree: TreeTransaction) -> EchoLocation? {
        guard node.ino != .root else { return EchoLocation(directories: [], name: nil) }
        var names: [FileName] = []
        var current: Node? = node
        while let this = current, this.ino != .root {
            guard names.count < 4096 else { return nil }
            names.append(this.name)
            current = this.parent.flatMap { tree.nodes[$0] }
        }
        guard current?.ino == .root, let name = names.first else { return nil }
        return EchoLocation(directories: names.dropFirst().reversed(), name: name)
    }

    /// What to touch after `node`'s remote update, if the echo is on (nil: it cannot be named
    /// below the mount).
    func echoTouch(for node: Node, contentChanged: Bool, in tree: TreeTransaction) -> EchoTouch? {
        guard let location = location(of: node, in: tree) else { return nil }
        if contentChanged && node.kind == .file {
            return .content(location, size: node.size.load(ordering: .relaxed))
        }
        return .attributes(location, kind: node.kind, mode: node.mode, uid: node.uid)
    }
}
