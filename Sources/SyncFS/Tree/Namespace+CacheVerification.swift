/// Which cached copies the first reads after a mount check (doc/SEMANTICS.md,
/// "Damaged cached content").
extension Namespace {
    /// One pass over the committed sync bases at mount: counts them (`SyncBases.count`), notes
    /// their IDs (`SyncBases.noteCommitted`) and marks every clean local file (synced,
    /// unmodified, its recorded length its base manifest's) as not yet checked against its
    /// manifest. Placeholders need no mark (downloads check every chunk), nor do modified files
    /// (no manifest describes them: their bytes are the program's).
    static func readBases(of tree: Namespace, store: MetadataStore, outbox: Outbox) throws {
        // Taken first: the outbox's lock is never taken inside the store's.
        let pending = outbox.pendingIDs
        try store.forEachSyncBase { id, base in
            tree.bases.noteCommitted(id)
            guard let node = tree.node(withID: id), node.kind == .file, !node.isPlaceholder, !node.contentLost,
                isClean(node, base: base, queued: pending.contains(id))
            else { return }
            node.contentUnverified.store(true, ordering: .relaxed)
        }
        tree.bases.loaded()
    }

    /// True if `node`'s cached copy should hold exactly `base`'s manifest: synced (a version
    /// from the container), no local change queued or unrecorded, the same length.
    static func isClean(_ node: Node, base: SyncBase, outbox: Outbox) -> Bool {
        isClean(node, base: base, queued: outbox.isPending(node.fileID))
    }

    /// `isClean`, with whether the file has an outbox row (`queued`) already known.
    static func isClean(_ node: Node, base: SyncBase, queued: Bool) -> Bool {
        base.version > 0 && !queued && !node.hasUnrecordedWrites
            && base.manifest.reduce(0, { $0 + $1.length }) == node.size.load(ordering: .relaxed)
    }
}
