/// Which cached copies the first reads after a mount check (doc/SEMANTICS.md,
/// "Damaged cached content").
extension Namespace {
    /// Marks every clean local file (synced, unmodified, its recorded length its base manifest's)
    /// as not yet checked against its manifest. Placeholders need no mark (downloads check every
    /// chunk), nor do modified files (no manifest describes them: their bytes are the program's).
    static func markCachedContentUnverified(_ tree: Namespace, outbox: Outbox) {
        for node in tree.nodes.values where node.kind == .file && !node.isPlaceholder {
            if !node.contentLost, let base = tree.bases[node.fileID],
                isClean(node, base: base, outbox: outbox)
            {
                node.contentUnverified.store(true, ordering: .relaxed)
            }
        }
    }

    /// True if `node`'s cached copy should hold exactly `base`'s manifest: synced (a version
    /// from the container), no local change queued or unrecorded, the same length.
    static func isClean(_ node: Node, base: SyncBase, outbox: Outbox) -> Bool {
        base.version > 0 && !outbox.isPending(node.fileID) && !node.hasUnrecordedWrites
            && base.manifest.reduce(0, { $0 + $1.length }) == node.size.load(ordering: .relaxed)
    }
}
