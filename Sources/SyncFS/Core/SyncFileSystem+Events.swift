import SyncBackend

/// Change events (`ChangeEvents`): what the core publishes, and when.
///
/// Local changes: `created` (create, mknod, mkdir, symlink), `deleted` (unlink, rmdir; a file
/// replaced by a rename), `renamed` (with `oldPath`; an exchange is two), `modified`: content once
/// per burst (when the last writer closes, on `fsync`, on `truncate` by path) and attribute
/// changes (mode, owner, times, `user.` extended attributes). A new file written and closed is
/// `created` then `modified`, as inotify's IN_CREATE then IN_CLOSE_WRITE.
/// Remote changes (the follower): `created`, `modified` (content or metadata), `renamed`,
/// `deleted`, and `conflict` for a local entry moved aside to a conflicted-copy name.
/// Downloads: `downloaded` when a file's content is all here (origin absent).
extension SyncFileSystem {
    /// An entry of this name changing (anywhere) has the rules read again (`RulesWatch`).
    static let rulesFileName = Array(".syncfs-rules".utf8)

    /// Publishes a change of `node` at its current path (or `path`). Under the namespace lock;
    /// one atomic load when nobody observes.
    func noteChange(
        _ kind: ChangeEvent.Kind, _ node: Node, origin: ChangeEvent.Origin?, oldPath: String? = nil,
        path: String? = nil, in tree: Namespace
    ) {
        if node.name.bytes == Self.rulesFileName { rulesWatch.touched() }
        guard changeEvents.isObserved else { return }
        changeEvents.publish(
            ChangeEvent(
                kind: kind, path: path ?? displayPath(of: node, in: tree), oldPath: oldPath, origin: origin,
                fileID: node.fileID, type: .init(node.kind)))
    }

    /// The node's path if anybody observes changes (for `oldPath` and deletions), else nil. Under
    /// the lock.
    func pathIfObserved(_ node: Node, in tree: Namespace) -> String? {
        changeEvents.isObserved ? displayPath(of: node, in: tree) : nil
    }

    /// Reports the content change of a burst that ends now (last writer closed, or `fsync`).
    /// Under the lock.
    func noteContentChangeEnded(_ node: Node, in tree: Namespace) {
        guard node.changedSinceEvent.exchange(false, ordering: .relaxed), !node.isUnlinked else { return }
        noteChange(.modified, node, origin: .local, in: tree)
    }
}
