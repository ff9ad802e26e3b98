import Foundation
import Glibc
import SyncBackend

/// What an open (a transaction) came to: done, or a placeholder to download first.
enum Opening<Opened> {
    case opened(Opened)
    /// Reserved as a writer by `placeholderNeedingContent`.
    case needsContent(Node)
}

/// Getting a file's content here for the kernel's operations: the read path's question (are these
/// bytes here?), whole downloads, and opens and changes of placeholders (`Hydrations` runs the
/// downloads; `CacheVerifier` checks a cached copy before it is served or changed).
extension ContentResidency {
    /// The read path: makes sure bytes `offset ..< offset + count` of the handle's file are in its
    /// cache file, downloading them if the file is a placeholder. A local file returns at once
    /// (one atomic load).
    func ensureContent(_ handle: OpenFile, offset: Int64, count: Int) throws(FSError) {
        let node = handle.node
        if node.contentIsLocal {
            // Lost content (`ContentLifecycle.hydrationStarted`): no bytes to give.
            if node.contentLost { throw .io(EIO) }
            // A copy found damaged is a placeholder now: downloaded below.
            if cacheVerifier.verifyCachedContent(handle, offset: offset, count: count) { return }
        }
        guard let hydration = try hydrations.hydration(of: node) else { return }
        try hydration.waitFor(offset: offset, count: count)
    }

    /// The read path without a thread: as `ensureContent`, but instead of blocking until the bytes
    /// are in the cache file, returns the reader's `ChunkWait` (nil: they are there, reply now).
    /// The FUSE adapter replies when the wait ends, so a download from a server that does not
    /// answer never holds a worker thread, and an interrupted reader is answered at once.
    func contentWait(_ handle: OpenFile, offset: Int64, count: Int) throws(FSError) -> ChunkWait? {
        let node = handle.node
        if node.contentIsLocal {
            if node.contentLost { throw .io(EIO) }
            // A copy found damaged is a placeholder now: downloaded below.
            if cacheVerifier.verifyCachedContent(handle, offset: offset, count: count) { return nil }
        }
        guard let hydration = try hydrations.hydration(of: node) else { return nil }
        return try hydration.wait(offset: offset, count: count)
    }

    /// Downloads the whole file if it is a placeholder and waits until it is local. `caller`: the
    /// thread that asked (a FUSE request's); a signal that asks it to stop (`InterruptingSignals`)
    /// ends the wait with EINTR (0: nothing ends it but the download's end).
    func hydrateCompletely(_ node: Node, for caller: pid_t = 0) throws(FSError) {
        let stops: (() -> Bool)? =
            caller > 0 ? { InterruptingSignals.stoppingSignalPending(forThread: caller) } : nil
        for _ in 0..<4 {
            // Below a folder excluded meanwhile (its running download was stopped): nothing is
            // downloaded out of sight.
            if live.transact({ tree in tree.isExcluded(node) }) { return }
            guard let hydration = try hydrations.hydration(of: node) else { return }
            hydration.retain()
            defer { hydration.releaseRetain() }
            try hydration.waitUntilFinished(stops: stops)
        }
        if live.transact({ _ in node.isPlaceholder }) { throw .stale }
    }

    /// Downloads the file with `id` if it is a placeholder (background downloads of pinned files).
    /// Returns false if it could not be completed.
    func hydrateCompletely(_ id: FileID) -> Bool {
        guard let node = live.transact({ tree in tree.node(withID: id) }) else { return true }
        do { try hydrateCompletely(node) } catch { return false }
        return true
    }

    /// For an open with `flags`: `O_TRUNC` makes a placeholder an empty local
    /// file; opening it for writing without `O_TRUNC` needs its content first — the node is
    /// returned, reserved as a writer (remote changes and eviction wait) until the caller's
    /// download (`openingWithDownloads`) ends. Nil when the open can go ahead.
    func placeholderNeedingContent(_ node: Node, flags: Int32, in tree: inout TreeTransaction) throws(FSError)
        -> Node?
    {
        guard node.isPlaceholder else { return nil }
        if flags & O_TRUNC != 0 {
            guard makeLocalWithoutContent(node, in: &tree) else { throw .io(EIO) }
            return nil
        }
        guard flags & O_ACCMODE != O_RDONLY else { return nil }
        node.openWriters += 1
        return node
    }

    /// Runs `attempt` (an open, in a transaction) and, each time it asks for a placeholder's content,
    /// downloads it, drops the reservation and tries again; the open re-checks in its transaction, so
    /// a file evicted or replaced meanwhile is downloaded again, never written as a placeholder.
    /// `caller`: the thread that opens (a signal that asks it to stop ends a download's wait with
    /// EINTR; `hydrateCompletely`).
    func openingWithDownloads<Opened>(for caller: pid_t = 0, _ attempt: () throws(FSError) -> Opening<Opened>)
        throws(FSError) -> Opened
    {
        for _ in 0..<4 {
            switch try attempt() {
            case .opened(let value): return value
            case .needsContent(let node):
                defer { live.transact { _ in node.openWriters -= 1 } }
                try hydrateCompletely(node, for: caller)
            }
        }
        throw .stale
    }

    /// Before content changes: a placeholder truncated to 0 becomes an empty local file without a
    /// download (`truncatingTo: 0`); any other change needs the whole content first.
    func prepareForWriting(_ node: Node, truncatingTo size: Int64?) throws(FSError) {
        if node.contentLost { try leaveLostContent(node, truncatingTo: size) }
        if size == 0 && node.writeFailure != 0 {
            live.transact { tree in tree.truncatedToZero(node) }
        }
        if size != 0 { cacheVerifier.verifyBeforeWriting(node) }
        if node.contentIsLocal { return }
        if size == 0 {
            let done = live.transact { tree in
                guard node.isPlaceholder else { return true }
                return makeLocalWithoutContent(node, in: &tree)
            }
            if done { return }
        }
        try hydrateCompletely(node)
    }

    /// A placeholder whose content is about to be discarded (truncated to 0, `O_TRUNC`) becomes
    /// an empty local file: the download stops, the cache file is emptied.
    func makeLocalWithoutContent(_ node: Node, in tree: inout TreeTransaction) -> Bool {
        // The cache file first: if it cannot be opened, the download goes on and nothing changed.
        guard let descriptor = try? cache.open(node.fileID) else { return false }
        defer { close(descriptor) }
        hydrations.cancelHydration(of: node, in: &tree)
        guard ftruncate(descriptor, 0) == 0 else { return false }
        node.retiredManifest = nil
        node.apply(.openedTruncating, queued: outbox.isPending(node.fileID))
        // Local now, though nothing may be recorded (an empty placeholder truncated to 0).
        tree.recount(node)
        transfers.finished(node.fileID)
        return true
    }
}
