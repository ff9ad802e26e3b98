import Glibc

/// `renameat2` flags the folder honours.
struct RenameFlags: OptionSet, Sendable {
    let rawValue: UInt32
    static let noReplace = RenameFlags(rawValue: 1)  // RENAME_NOREPLACE
    static let exchange = RenameFlags(rawValue: 2)  // RENAME_EXCHANGE
}

extension SyncFileSystem {
    func unlink(parent: InodeNumber, name: FileName, caller: Caller = .thisProcess) throws(FSError) {
        if let echoed = echo.request(from: caller) { return try echoed.remove(parent: parent, name: name) }
        try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            try tree.refuseIfUnannounced(parent, name)
            guard let node = tree.child(of: directory, named: name) else { throw .notFound }
            if node.kind == .directory { throw .isDirectory }
            try tree.unlinkNode(node, from: directory)
        }
    }

    func symlink(target: [UInt8], parent: InodeNumber, name: FileName, caller: Caller) throws(FSError)
        -> EntryReply
    {
        if let echoed = echo.request(from: caller) {
            return try echoed.create(parent: parent, name: name, kind: .symlink)
        }
        let name = try name.validated()
        guard !target.isEmpty else { throw .notFound }
        guard target.count < Int(PATH_MAX) else { throw .nameTooLong }
        return try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            let node = try tree.makeNode(
                .symlink, in: directory, name: name, mode: 0o777, caller: caller, symlinkTarget: target)
            return tree.entryReply(for: node)
        }
    }

    func readlink(_ ino: InodeNumber) throws(FSError) -> [UInt8] {
        try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            guard node.kind == .symlink, let target = node.symlinkTarget else { throw .invalidArgument }
            return target
        }
    }

    /// Hard links cannot be synced as links: refused with EPERM (see doc/SEMANTICS.md).
    func link() throws(FSError) { throw .notPermitted }

    /// `rename`/`renameat2`: moves `name` in `parent` to `newName` in `newParent`, replacing a
    /// compatible target atomically; `RENAME_NOREPLACE` refuses an existing target and
    /// `RENAME_EXCHANGE` swaps two existing entries. The moved node keeps its file ID.
    func rename(
        parent: InodeNumber, name: FileName, newParent: InodeNumber, newName: FileName, flags: RenameFlags,
        caller: Caller = .thisProcess
    ) throws(FSError) {
        if let echoed = echo.request(from: caller) {
            return try echoed.move(parent: parent, name: name, newParent: newParent, newName: newName)
        }
        let newName = try newName.validated()
        if flags.contains(.noReplace) && flags.contains(.exchange) { throw .invalidArgument }
        if !flags.isSubset(of: [.noReplace, .exchange]) { throw .invalidArgument }
        let movedUnderAPin = try live.transact { tree throws(FSError) -> Bool in
            let source = try tree.directory(parent)
            let destination = try tree.directory(newParent)
            try tree.refuseIfUnannounced(parent, name)
            try tree.refuseIfUnannounced(newParent, newName)
            guard let node = tree.child(of: source, named: name) else { throw .notFound }
            let target = tree.child(of: destination, named: newName)
            if node.kind == .directory && tree.isSameOrBelow(destination, node) && target?.ino != node.ino {
                throw .invalidArgument
            }
            let now = Clock.nowNanoseconds()
            let oldPath = tree.pathIfObserved(node)
            if flags.contains(.exchange) {
                guard let target else { throw .notFound }
                if target.kind == .directory && tree.isSameOrBelow(source, target) { throw .invalidArgument }
                try exchange(node, target, in: &tree, now: now)
                return false
            }
            if let target {
                if target.ino == node.ino { return false }
                if flags.contains(.noReplace) { throw .exists }
                switch (node.kind == .directory, target.kind == .directory) {
                case (true, false): throw .notDirectory
                case (false, true): throw .isDirectory
                case (true, true): if !target.children.isEmpty || tree.holdsExcludedFolder(target) { throw .notEmpty }
                case (false, false): break
                }
                // Save-by-rename keeps one identity at the name: no `deleted` for the replaced file.
                let tookIdentity =
                    node.kind == .file && target.kind == .file && tree.bases[node.fileID] == nil
                    && takeIdentity(of: target, into: node, in: &tree)
                try tree.unlinkNode(target, from: destination, publishing: !tookIdentity)
            }
            tree.detach(node)
            tree.attach(node, to: destination, as: newName)
            node.ctime = now
            tree.recordLocalChange(node)
            tree.touchDirectory(source, now: now)
            if destination.ino != source.ino { tree.touchDirectory(destination, now: now) }
            tree.noteChange(.renamed, node, origin: .local, oldPath: oldPath)
            return destination.ino != source.ino && tree.pinState(of: node) != .none
        }
        // Placeholders moved under a pin are downloaded like those that arrive there.
        if movedUnderAPin { residency.pinsChanged() }
    }

    /// Save-by-rename: a file never synced (an editor's temporary file) replaces a file, so it
    /// takes over the replaced file's identity — the container sees a new version of the same
    /// file, not a delete and a create. The replacement's cache file moves to the identity's
    /// path (atomically replacing the old content, which open handles keep reading); the
    /// replaced node, about to be unlinked, takes the replacement's old, now unused, identity.
    ///
    ///
    /// Crash safety: the replacement's cache file is *hard-linked* to the identity's path (via a
    /// temporary name and an atomic rename), not moved, so until the batch recording the swap is
    /// committed, the replacement's own path still holds its bytes; the old path goes with the
    /// replaced node, after that commit. The replaced file's path holds the replacement's bytes
    /// from the link on, so a crash before that commit shows the old tree with the new content
    /// at the replaced name (queued for upload). If that content is shorter, the replaced
    /// file's smaller size is committed before the link (`commitSizeAhead`): its record never
    /// claims more bytes than its cache file holds, which would read as damage after a crash.
    private func takeIdentity(of target: Node, into node: Node, in tree: inout TreeTransaction) -> Bool {
        let kept = target.fileID
        let abandoned = node.fileID
        let replacementSize = node.size.load(ordering: .relaxed)
        let shrinks =
            replacementSize < target.size.load(ordering: .relaxed) && !target.isUnlinked && !target.isPlaceholder
        if shrinks {
            do {
                try tree.commitSizeAhead(of: target, size: replacementSize)
            } catch {
                logger.warning("could not record the new size of \(target.name) before replacing it: \(error)")
            }
        }
        guard cache.linkContent(of: abandoned, as: kept) else {
            // The replaced file keeps its content: its record gets its own size back.
            if shrinks { tree.recordChange(target) }
            return false
        }
        node.fileID = kept
        target.fileID = abandoned
        tree.byFileID[kept] = node.ino
        tree.byFileID[abandoned] = target.ino
        node.cacheEntryDurable.store(false, ordering: .relaxed)
        return true
    }

    /// `RENAME_EXCHANGE`: both names stay, pointing at each other's node. Both records change in
    /// one batch, so a crash shows either the old or the new pair.
    private func exchange(_ first: Node, _ second: Node, in tree: inout TreeTransaction, now: Int64) throws(FSError) {
        guard let firstParentIno = first.parent, let secondParentIno = second.parent,
            let firstParent = tree.nodes[firstParentIno], let secondParent = tree.nodes[secondParentIno]
        else { throw .notFound }
        if first.ino == second.ino { return }
        let (firstPath, secondPath) = (tree.pathIfObserved(first), tree.pathIfObserved(second))
        let firstName = first.name
        let secondName = second.name
        tree.detach(first)
        tree.detach(second)
        tree.attach(first, to: secondParent, as: secondName)
        tree.attach(second, to: firstParent, as: firstName)
        first.ctime = now
        second.ctime = now
        first.recordHandedToStore()
        second.recordHandedToStore()
        tree.record([
            .upsert(first.record), outbox.changed(first.fileID), .upsert(second.record), outbox.changed(second.fileID),
        ])
        tree.touchDirectory(firstParent, now: now)
        if secondParent.ino != firstParent.ino { tree.touchDirectory(secondParent, now: now) }
        tree.noteChange(.renamed, first, origin: .local, oldPath: firstPath, path: secondPath)
        tree.noteChange(.renamed, second, origin: .local, oldPath: secondPath, path: firstPath)
    }
}
