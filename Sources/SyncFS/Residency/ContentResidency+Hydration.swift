import Foundation
import Glibc
import SyncBackend

/// What an open (a transaction) came to: done, or a placeholder to download first.
enum Opening<Opened> {
    case opened(Opened)
    /// Reserved as a writer by `placeholderNeedingContent`.
    case needsContent(Node)
}

extension ContentResidency {
    /// How long a download keeps retrying an unreachable container while a reader waits, before
    /// the read fails with `ENETDOWN`.
    static let unreachableGiveUp: Double = 3
    /// How long a download that gave up on an unreachable container makes the next ones fail at
    /// once (10 s): the kernel retries a failed readahead with smaller reads, each of which would
    /// otherwise wait `unreachableGiveUp` again.
    static let unreachableRemembered: Duration = .seconds(10)
    /// How long after a download gave up on a container that did not answer (a hung server) the
    /// next ones fail without asking it at all (2 s): enough for the kernel's retry of the failed
    /// read, short enough that a program trying again a little later finds a server that is back.
    static let unansweredJustSeen: Duration = .seconds(2)

    /// Process names (as in `/proc/PID/comm`) whose reads never start a download: they get
    /// `EACCES` for bytes not yet downloaded (thumbnailers, indexers; `mount --no-download-for`).
    func setDownloadExclusions(_ names: Set<String>) { downloadExclusions.withLock { $0 = names } }

    /// Whether any process is kept from starting downloads (`setDownloadExclusions`).
    var hasDownloadExclusions: Bool { !downloadExclusions.withLock { $0.isEmpty } }

    /// True if a read of a placeholder by the process `name` must not download.
    func downloadsExcluded(for name: () -> String?) -> Bool {
        let excluded = downloadExclusions.withLock { $0 }
        guard !excluded.isEmpty, let name = name() else { return false }
        return excluded.contains(name)
    }

    /// Sets where placeholders' content comes from (the sync engine, once started).
    func setChunkSource(_ source: (any ChunkSource)?) { chunkSource.withLock { $0 = source } }

    /// The read path: makes sure bytes `offset ..< offset + count` of the handle's file are in its
    /// cache file, downloading them if the file is a placeholder. A local file returns at once
    /// (one atomic load).
    func ensureContent(_ handle: OpenFile, offset: Int64, count: Int) throws(FSError) {
        let node = handle.node
        if node.contentIsLocal {
            // Lost content (`ContentLifecycle.hydrationStarted`): no bytes to give.
            if node.contentLost { throw .io(EIO) }
            // A copy found damaged is a placeholder now: downloaded below.
            if verifyCachedContent(handle, offset: offset, count: count) { return }
        }
        guard let hydration = try hydration(of: node) else { return }
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
            if verifyCachedContent(handle, offset: offset, count: count) { return nil }
        }
        guard let hydration = try hydration(of: node) else { return nil }
        return try hydration.wait(offset: offset, count: count)
    }

    /// Downloads the whole file if it is a placeholder and waits until it is local. `caller`: the
    /// thread that asked (a FUSE request's); a signal that asks it to stop (`InterruptingSignals`)
    /// ends the wait with EINTR (0: nothing ends it but the download's end).
    func hydrateCompletely(_ node: Node, for caller: pid_t = 0) throws(FSError) {
        let stops: (() -> Bool)? =
            caller > 0 ? { InterruptingSignals.stoppingSignalPending(forThread: caller) } : nil
        for _ in 0..<4 {
            guard let hydration = try hydration(of: node) else { return }
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
        if size != 0 { verifyBeforeWriting(node) }
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
        cancelHydration(of: node, in: &tree)
        guard ftruncate(descriptor, 0) == 0 else { return false }
        node.retiredManifest = nil
        node.apply(.openedTruncating, queued: outbox.isPending(node.fileID))
        transfers.finished(node.fileID)
        return true
    }

    /// The running download of `node`, started if needed; nil if the content is local.
    func hydration(of node: Node) throws(FSError) -> Hydration? {
        try live.transact { tree throws(FSError) in try hydrationLocked(node, tree: &tree) }
    }

    /// See `hydration(of:)`.
    func hydrationLocked(_ node: Node, tree: inout TreeTransaction) throws(FSError) -> Hydration? {
        guard node.isPlaceholder else { return nil }
        if let running = node.hydration { return running }
        guard let manifest = node.retiredManifest ?? tree.bases[node.fileID]?.manifest else { throw .stale }
        let descriptor = try cache.open(node.fileID)
        var info = stat()
        let resumes = fstat(descriptor, &info) == 0 && info.st_blocks > 0
        let hydration = Hydration(manifest: manifest, descriptor: descriptor, resumes: resumes)
        guard ftruncate(descriptor, off_t(hydration.length)) == 0 else {
            let error = FSError.fromErrno()
            close(descriptor)
            throw error
        }
        node.hydration = hydration
        node.apply(.hydrationStarted, queued: outbox.isPending(node.fileID))
        let path = tree.displayPath(of: node)
        let id = node.fileID
        downloadDrivers.start("syncfs-download") { [self] worker in
            Self.downloadSlots.wait()
            runHydration(hydration, of: node, id: id, path: path, on: worker)
            Self.downloadSlots.signal()
        }
        return hydration
    }

    /// The driver of one download: fetches (or finds on disk) every chunk, syncs the file, and
    /// marks the node local; on failure, readers get the error and the node stays a placeholder.
    /// At most this many files download at once; more wait for a slot.
    static let downloadSlots = DispatchSemaphore(value: 4)

    /// Chunks fetched at once per download: the container's read of one overlaps the hash and
    /// zlib work of the other.
    static let fetchersPerDownload = 2

    private func runHydration(_ hydration: Hydration, of node: Node, id: FileID, path: String, on worker: Worker) {
        let started = Clock.nowNanoseconds()
        transfers.started(id, direction: .download, total: hydration.length)
        let helpers = (1..<Self.fetchersPerDownload).map { _ in
            Worker.start("syncfs-download") { [self] helper in
                fetchChunks(of: hydration, id: id, path: path, on: helper)
            }
        }
        fetchChunks(of: hydration, id: id, path: path, on: worker)
        for helper in helpers { helper.join() }
        var complete = hydration.isComplete
        if complete && Glibc.fsync(hydration.descriptor) != 0 {
            hydration.fail(.fromErrno())
            complete = false
        }
        close(hydration.descriptor)
        live.transact { tree in
            guard node.hydration === hydration else { return }
            node.hydration = nil
            let queued = outbox.isPending(node.fileID)
            node.apply(complete ? .hydrationFinished : .hydrationFailed, queued: queued)
            if complete {
                // Every chunk was checked on its way in (an evicted copy marked at mount is done).
                node.contentUnverified.store(false, ordering: .releasing)
                node.verification = nil
                node.retiredManifest = nil
                node.lastUsed = Clock.nowNanoseconds()
                if !node.isUnlinked {
                    tree.recordChange(node)
                    tree.noteChange(.downloaded, node, origin: nil)
                }
            }
        }
        if complete { transfers.finished(id) } else { transfers.ended(id) }
        if complete { contentActivity.note() }
        if complete { logDownload(hydration, id: id, started: started) }
        hydration.markFinished()
    }

    /// One fetcher of a download: takes chunks until none is left, the download failed or was
    /// cancelled. An unreachable container is retried for `unreachableGiveUp` seconds.
    /// A chunk arrived: downloads that were failing work again (logged once).
    private func noteDownloadsAnswered(afterFailing: Bool) {
        if afterFailing || lastUnreachableDownload.load(ordering: .relaxed) != 0 {
            logDownloadsWorkAgain()
        }
        lastUnreachableDownload.store(0, ordering: .relaxed)
        lastUnansweredDownload.store(0, ordering: .relaxed)
    }

    /// The container did not answer for a chunk of `hydration`: gives up (true) if it was known
    /// unreachable a moment ago (the kernel retrying a failed readahead with a smaller read) or
    /// has failed since `failingSince` for `unreachableGiveUp`. Not a failure of this file: the
    /// mount is offline (`status` says so once) and the file stays a placeholder, readable again
    /// once it is back.
    private func gaveUpUnreachable(
        _ hydration: Hydration, id: FileID, path: String, reason: String, failingSince: Date, attemptStarted: Date
    ) -> Bool {
        let knownDown =
            Clock.nowNanoseconds() - lastUnreachableDownload.load(ordering: .relaxed)
            < Self.unreachableRemembered.inNanoseconds
        guard knownDown || Date().timeIntervalSince(failingSince) >= Self.unreachableGiveUp else { return false }
        lastUnreachableDownload.store(Clock.nowNanoseconds(), ordering: .relaxed)
        if Date().timeIntervalSince(attemptStarted) >= 1 {
            lastUnansweredDownload.store(Clock.nowNanoseconds(), ordering: .relaxed)
        }
        // Logged before readers are woken with the error (they may look for it).
        if !hydration.hasEnded { logDownloadUnreachable(path, id: id, reason: reason) }
        transfers.ended(id)
        hydration.fail(.containerUnreachable)
        return true
    }

    private func fetchChunks(of hydration: Hydration, id: FileID, path: String, on worker: Worker) {
        var failingSince: Date?
        var pause = 0.05
        while let index = hydration.nextChunk() {
            let ref = hydration.manifest[index]
            if hydration.resumes && chunkOnDisk(ref, at: hydration.offsets[index], in: hydration.descriptor) {
                hydration.markFoundOnDisk(index)
                continue
            }
            guard let source = chunkSource.withLock({ $0 }) else {
                hydration.fail(.containerUnreachable)
                return
            }
            // A server that did not answer a moment ago (the kernel retries a failed read at
            // once, with a smaller one): fail without asking again, which would cost a whole
            // deadline. (A server that refuses is asked again: that costs nothing.)
            if failingSince == nil
                && Clock.nowNanoseconds() - lastUnansweredDownload.load(ordering: .relaxed)
                    < Self.unansweredJustSeen.inNanoseconds
            {
                transfers.ended(id)
                hydration.fail(.containerUnreachable)
                return
            }
            // A server that does not answer fails a call only at its deadline: the time to give
            // up counts from when the failing call began, not from its end.
            let attemptStarted = Date()
            do throws(ChunkFetchError) {
                let bytes = try source.plainChunk(ref)
                noteDownloadsAnswered(afterFailing: failingSince != nil)
                failingSince = nil
                pause = 0.05
                guard hydration.store(index, bytes) else { return }
                transfers.progressed(id, done: hydration.progress.done)
            } catch {
                hydration.abandon(index)
                switch error {
                case .unreachable(let reason):
                    let since = failingSince ?? attemptStarted
                    failingSince = since
                    if gaveUpUnreachable(
                        hydration, id: id, path: path, reason: reason, failingSince: since,
                        attemptStarted: attemptStarted)
                    {
                        return
                    }
                    worker.sleep(for: .seconds(pause))
                    pause = min(pause * 2, 0.5)
                case .unavailable(let reason):
                    if !hydration.hasEnded { logger.error("cannot download \(path): \(reason)") }
                    transfers.failed(id, "download: \(reason)")
                    hydration.fail(.contentUnavailable)
                    return
                }
            }
        }
    }

    /// True if the chunk `ref` at `offset` is already in the file (a resumed download).
    private func chunkOnDisk(_ ref: ChunkRef, at offset: Int64, in descriptor: Int32) -> Bool {
        // A hole where the chunk starts: never written.
        guard Glibc.lseek(descriptor, off_t(offset), SeekWhence.data) == off_t(offset) else { return false }
        var bytes = [UInt8](repeating: 0, count: Int(ref.length))
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        return count == Int(ref.length) && bytes.withUnsafeBytes { ChunkCodec.hash($0) } == ref.hash
    }

    /// After the last handle of `node` closed: a download nobody waits for (no reader, no
    /// `download`/pin) stops; what it fetched stays on disk for a later one.
    func stopUnneededHydration(of node: Node, in tree: inout TreeTransaction) {
        guard node.openCount == 0, let running = node.hydration, !running.isWanted, !running.isComplete else { return }
        cancelHydration(of: node, in: &tree)
    }

    /// True if a read of a placeholder by a process that must not download can be served from
    /// what is already on disk.
    func contentPresent(_ handle: OpenFile, offset: Int64, count: Int) -> Bool {
        guard let running = live.transact({ _ in handle.node.hydration }) else { return false }
        return running.isPresent(offset: offset, count: count)
    }

    /// Waits (at most `seconds`) for downloads still running to end (at shutdown).
    func waitForDownloads(seconds: Double) {
        downloadDrivers.join(within: .seconds(seconds))
    }

    /// Stops the download of `node` (its content is being replaced or truncated).
    func cancelHydration(of node: Node, in tree: inout TreeTransaction) {
        guard let running = node.hydration else { return }
        running.cancel()
        node.hydration = nil
        node.apply(.hydrationFailed, queued: outbox.isPending(node.fileID))
    }
}
