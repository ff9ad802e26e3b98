import Glibc
import SyncBackend

/// A request the echo thread made through the mount, as the FUSE adapter hands it over.
public enum EchoOperation: Sendable {
    case create(parent: InodeNumber, name: FileName, kind: NodeKind)
    case remove(parent: InodeNumber, name: FileName)
    case move(parent: InodeNumber, name: FileName, newParent: InodeNumber, newName: FileName)
}

/// The inotify echo of remote changes (see `InotifyEcho`): its start and stop, the follower's
/// side (`applyRemoteEchoed`) and the FUSE handlers' side (`applyEchoed`, `openForEcho`).
extension SyncFileSystem {
    /// Starts echoing remote changes through `mountpoint` (the session must be mounted).
    /// `prepareThread` runs first on the echo thread (the daemon isolates it from `/dev/fuse`);
    /// if it fails, there is no echo.
    public func startInotifyEcho(
        mountpoint: String, timeout: Double = 2, prepareThread: @escaping @Sendable () -> Bool = { true }
    ) {
        let echo = InotifyEcho(mountpoint: mountpoint, timeout: timeout, prepare: prepareThread) {
            [weak self] tid in
            self?.echoThreadID.store(tid, ordering: .relaxed)
        }
        inotifyEcho.withLock { $0 = echo }
    }

    /// Stops the echo (the session is ending): remote changes are applied directly from now on.
    public func stopInotifyEcho() {
        inotifyEcho.withLock { echo in
            echo?.stop()
            echo = nil
        }
        echoThreadID.store(0, ordering: .relaxed)
    }

    /// True if a FUSE request with this pid comes from the echo thread (one atomic load).
    @inline(__always)
    public func isEchoRequest(pid: Int32) -> Bool {
        let tid = echoThreadID.load(ordering: .relaxed)
        return tid != 0 && pid == tid
    }

    /// Steps the echo completed and steps that timed out since the mount (tests, log).
    public var echoStatistics: (completed: Int, timedOut: Int)? {
        inotifyEcho.withLock { echo in echo.map { ($0.completedSteps, $0.timedOutSteps) } }
    }

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
                $0 = .waiting(PendingRemoteChange(entry: entry, contentFile: contentFile, force: force, step: step))
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
    /// named below the mount). Under the lock.
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
    /// it is not attached to the root or a name is not one path component. Under the lock.
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
    /// below the mount). Under the lock.
    func echoTouch(for node: Node, contentChanged: Bool, in tree: TreeTransaction) -> EchoTouch? {
        guard let location = location(of: node, in: tree) else { return nil }
        if contentChanged && node.kind == .file {
            return .content(location, size: node.size.load(ordering: .relaxed))
        }
        return .attributes(location, kind: node.kind, mode: node.mode, uid: node.uid)
    }

    // MARK: The FUSE handlers' side

    /// A create, unlink/rmdir or rename made by the echo thread: applies the pending remote
    /// change it carries, under the lock, and says whether the call did what the kernel will
    /// believe it did. Creates return the new entry (counting the kernel's reference). Throws if
    /// it did not (the kernel then keeps its view; invalidations follow after the call).
    public func applyEchoed(_ operation: EchoOperation) throws(FSError) -> EntryReply? {
        guard let echo = inotifyEcho.withLock({ $0 }) else { throw .io(EAGAIN) }
        return try live.transact { tree throws(FSError) -> EntryReply? in
            try echo.pending.withLock { slot throws(FSError) -> EntryReply? in
                guard case .waiting(let change) = slot, matches(operation, change, in: tree) else {
                    throw .io(EAGAIN)
                }
                var application = RemoteApplication(wantsTouch: true)
                let plan = applyRemoteLocked(
                    change.entry, contentFile: change.contentFile, force: change.force, tree: &tree,
                    into: &application)
                // Sent by the follower once the echo's request is answered, not from this handler.
                application.invalidations = tree.takeInvalidations()
                slot = .done(plan, application)
                let node = tree.node(withID: change.entry.id).flatMap { $0.isUnlinked ? nil : $0 }
                switch operation {
                case .create(let parent, let name, let kind):
                    guard case .apply = plan, let node, node.parent == parent, node.name == name, node.kind == kind
                    else { throw .io(EAGAIN) }
                    return tree.entryReply(for: node)
                case .remove:
                    guard node == nil else { throw .notEmpty }
                    return nil
                case .move(_, _, let newParent, let newName):
                    guard let node, node.parent == newParent, node.name == newName else { throw .io(EAGAIN) }
                    return nil
                }
            }
        }
    }

    /// True if the echo thread's request is the pending change's step. Under the lock.
    private func matches(_ operation: EchoOperation, _ change: PendingRemoteChange, in tree: TreeTransaction) -> Bool {
        let entry = change.entry
        let parentIno = entry.state.parent.flatMap { tree.node(withID: $0)?.ino }
        switch (operation, change.step) {
        case (.create(let parent, let name, let kind), .create):
            return !entry.isDeleted && parentIno == parent && name.bytes == entry.state.name
                && kind == entry.state.kind
        case (.remove(let parent, let name), .remove):
            return entry.isDeleted && tree.nodes[parent].flatMap { tree.child(of: $0, named: name) }?.fileID == entry.id
        case (.move(let parent, let name, let newParent, let newName), .move):
            return !entry.isDeleted
                && tree.nodes[parent].flatMap { tree.child(of: $0, named: name) }?.fileID == entry.id
                && parentIno == newParent && newName.bytes == entry.state.name
        default:
            return false
        }
    }

    /// `setattr` by the echo thread: changes nothing and answers the attributes. A `size` in it is
    /// a content touch's `truncate(path, same size)`, which the kernel carries out on its side:
    /// it cuts its page cache to the size answered. Under the writeback cache a program's write
    /// stays in that cache until it is written back (at the latest when the program closes the
    /// file), so a program that opened the file after the remote change and has written to it
    /// would lose its write without an error (a lost append of the convergence test). The touch
    /// is therefore refused (`EBUSY`; it then shows no `IN_MODIFY`, the writer's own close does)
    /// while the file is open for writing, or when it no longer has that size (written and closed
    /// since). The kernel holds the inode lock for the whole truncate, so no write can start
    /// between this check and the cut.
    public func echoSetattr(_ ino: InodeNumber, size: Int64?) throws(FSError) -> FileAttributes {
        try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            if let size, node.openWriters > 0 || node.size.load(ordering: .relaxed) != size {
                throw .io(EBUSY)
            }
            return tree.attributes(of: node)
        }
    }

    /// `open` by the echo thread: a handle on the cache file of a local file that counts as
    /// neither open nor writing and records nothing; nil for a placeholder (nothing downloads).
    public func openForEcho(_ ino: InodeNumber) -> OpenFile? {
        live.transact { tree in
            guard let node = tree.nodes[ino], node.kind == .file, !node.isPlaceholder,
                let descriptor = try? cache.open(node.fileID)
            else { return nil }
            return OpenFile(node: node, descriptor: descriptor, writable: true, isEcho: true)
        }
    }
}
