import Glibc
import Logging
import SyncBackend
import Synchronization

/// Cached content is verified (doc/SEMANTICS.md, "Damaged cached content"): the
/// first reads of a clean local file after a mount check the chunks they cover against the chunk
/// hashes of the manifest the file is recorded to hold (`Node.contentUnverified`). A mismatch
/// discards the copy — the file becomes a placeholder again (the kernel's cached pages of it stay:
/// they passed the check, see `discardDamagedCopy`) — and the read downloads the file like any
/// placeholder: a damaged copy is never served.
///
/// Uses the tree (the check running for a file hangs on its node: `Node.verification`), the cache
/// files it reads, the outbox (only a clean copy is checked) and the logger. `ContentResidency`
/// asks it before it serves or changes cached content.
final class CacheVerifier: Sendable, HoldsTheTree {
    let parts: FolderParts
    /// Cached copies found damaged since the mount (discarded and downloaded again; `status`).
    let damagedCopiesFound = Atomic<Int>(0)

    init(parts: FolderParts) { self.parts = parts }

    /// Checks the chunks of `handle`'s file that bytes `offset ..< offset + count` need (all of
    /// them if `count` is nil). True if they may be served from the cache file; false if the copy
    /// was found damaged and discarded, by this read or another (the file is a placeholder now:
    /// download it).
    func verifyCachedContent(_ handle: OpenFile, offset: Int64, count: Int?) -> Bool {
        verifyCachedContent(handle.node, offset: offset, count: count, descriptor: handle.descriptor)
    }

    /// Before a program may change the content (a writable open without `O_TRUNC`, a truncation
    /// to a non-zero length): the whole copy is checked, so damaged bytes never become part of an
    /// edit that is then uploaded. A damaged copy becomes a placeholder, which the caller then
    /// downloads before writing, as for any placeholder.
    func verifyBeforeWriting(_ node: Node) {
        guard node.contentUnverified.load(ordering: .acquiring) else { return }
        let descriptor = Glibc.open(cache.path(for: node.fileID), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = verifyCachedContent(node, offset: 0, count: nil, descriptor: descriptor)
    }

    /// Also false when another reader found the copy damaged and discarded it after this one
    /// found the file local (two READs of one range at once, the kernel's asynchronous
    /// readahead): the cache file holds the garbage until the download repairs it. The discard
    /// makes the file a placeholder before it clears `contentUnverified`, so a reader that sees
    /// the mark cleared sees the placeholder too.
    private func verifyCachedContent(_ node: Node, offset: Int64, count: Int?, descriptor: Int32) -> Bool {
        guard node.contentUnverified.load(ordering: .acquiring),
            let (check, token) = live.transact({ tree in verificationToRun(node, in: tree) })
        else { return node.contentIsLocal }
        switch check.verify(offset: offset, count: count, descriptor: descriptor) {
        case .intact(let complete):
            if complete {
                live.transact { _ in
                    guard node.verification === check else { return }
                    node.verification = nil
                    node.contentUnverified.store(false, ordering: .releasing)
                }
            }
            return true
        case .damaged(let index):
            // Not discarded: a program changed the file since (its bytes are served), or another
            // reader discarded it first (a placeholder now: downloaded).
            return !discardDamagedCopy(node, check: check, token: token, chunk: index)
                && node.contentIsLocal
        }
    }

    /// The check `node` needs now, with the content token it starts from; nil (and the mark
    /// cleared) if none: the file is no longer a clean local copy of its base — a program wrote
    /// or is writing it (its bytes are the program's), it is a placeholder again, or a change is
    /// in progress.
    private func verificationToRun(_ node: Node, in tree: TreeTransaction) -> (CacheVerification, UInt64)? {
        guard node.contentUnverified.load(ordering: .acquiring) else { return nil }
        guard let manifest = cachedContentToVerify(node, in: tree), let token = node.contentToken() else {
            node.verification = nil
            node.contentUnverified.store(false, ordering: .releasing)
            return nil
        }
        if let running = node.verification, running.manifest == manifest { return (running, token) }
        let check = CacheVerification(manifest: manifest)
        node.verification = check
        return (check, token)
    }

    /// The manifest `node`'s cache file must hold, if it is still a clean local copy nobody is
    /// writing. Call under the namespace lock.
    func cachedContentToVerify(_ node: Node, in tree: TreeTransaction) -> [ChunkRef]? {
        guard node.kind == .file, node.contentIsLocal,
            !node.contentLost, node.openWriters == 0, node.hydration == nil,
            let base = tree.bases[node.fileID], Namespace.isClean(node, base: base, outbox: outbox)
        else { return nil }
        return base.manifest
    }

    /// The copy of `node` failed `check` at chunk `chunk`: unless it changed since (then it is a
    /// program's and nothing is discarded), the file becomes a placeholder (recorded, so a crash
    /// keeps it one), and it is logged and counted. The cache file stays: the download that
    /// follows checks each chunk on disk and fetches only those that fail (`Hydration.resumes`).
    /// True if discarded.
    ///
    /// The kernel's cached pages of the file are left as they are, on purpose: every read that
    /// reaches the daemon is checked before it is answered, so the kernel holds only chunks that
    /// passed (and the download restores the same bytes). Invalidating them is not only useless
    /// but harmful here: sent from the read request that found the damage, the invalidation waits
    /// for the page that request holds locked until it is answered — a deadlock (seen in
    /// `DamagedCacheTest`); sent from another thread, it waits in the kernel until the download
    /// ends, and a daemon killed meanwhile could not exit (ARCHITECTURE.md, "Dying").
    private func discardDamagedCopy(_ node: Node, check: CacheVerification, token: UInt64, chunk: Int) -> Bool {
        live.transact { tree in
            guard node.verification === check, node.contentUnchanged(since: token),
                cachedContentToVerify(node, in: tree) == check.manifest
            else { return false }
            node.verification = nil
            // A placeholder first: a reader that sees the mark cleared must see this too.
            let transition = node.apply(.cachedCopyDamaged, queued: outbox.isPending(node.fileID))
            node.contentUnverified.store(false, ordering: .releasing)
            if transition.actions.contains(.recordResidency) && !node.isUnlinked { tree.recordChange(node) }
            damagedCopiesFound.add(1, ordering: .relaxed)
            let path = node.isUnlinked ? "(removed) \(node.name)" : tree.displayPath(of: node)
            logger.error(
                "the cached copy of \(LogText.line(path)) (file \(node.fileID)) is damaged (chunk \(chunk + 1) of \(check.manifest.count), at byte \(check.offsets[chunk]), does not match its hash): discarded; the file is downloaded again when read"
            )
            return true
        }
    }
}
