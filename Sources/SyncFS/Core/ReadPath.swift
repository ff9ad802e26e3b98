import Dispatch
import Glibc

/// The read path's preparation: before the FUSE adapter replies to a READ straight from the
/// handle's cache file, it asks here whether the bytes are there, and gets a wait for them if
/// they are being downloaded (`prepareRead`).
///
/// Uses the tree (its lock orders a retry after the transaction that cancelled a download), the
/// residency (downloads, checks of cached copies) and its hydrations (which readers may start a
/// download).
final class ReadPath: Sendable {
    private let live: LiveTree
    private let residency: ContentResidency
    private let hydrations: Hydrations

    init(live: LiveTree, residency: ContentResidency) {
        self.live = live
        self.residency = residency
        hydrations = residency.hydrations
    }

    /// How many times one read is prepared again after the download it waited for was cancelled.
    static let readRetriesAfterCancel = 3

    /// The read path's one question, asked before the adapter replies straight from the handle's
    /// cache file: are bytes `offset ..< offset + count` there? A local file: yes, at once (one
    /// atomic load; nil), unless its content was lost (EIO) or its cached copy is not yet checked
    /// since the mount (the chunks in the range are checked first; a damaged copy becomes a
    /// placeholder). A placeholder: they are downloaded, and the answer is the reader's
    /// `ChunkWait` (the adapter replies when it ends: no thread waits), unless the reader is a
    /// process that must not start downloads (`Hydrations.setDownloadExclusions`;
    /// `processName` is asked only then, once), which gets `EACCES` for bytes not here yet.
    ///
    /// A download cancelled under a waiting reader — the file was truncated, or its content
    /// replaced, while the read waited — does not fail the read (it used to end with `ESTALE`):
    /// the read is prepared again against what the file holds now, as if it had come after the
    /// change (a truncated file answers from its cache file: zero bytes past the new end; new
    /// content is downloaded). At most `readRetriesAfterCancel` times, then `ESTALE`.
    func prepareRead(_ handle: OpenFile, offset: Int64, count: Int, processName: () -> String?)
        throws(FSError) -> ChunkWait?
    {
        var retries = Self.readRetriesAfterCancel
        // Asked at most once (a /proc read): by the exclusion check, or below for a retry.
        var askedName: String??
        let wait = try readWait(handle, offset: offset, count: count, retries: &retries) {
            if let askedName { return askedName }
            let name = processName()
            askedName = .some(name)
            return name
        }
        guard let wait else { return nil }
        // A retry runs later on another thread: it needs the name now (only where it matters).
        let readerName = hydrations.hasDownloadExclusions ? (askedName ?? processName()) : nil
        let answer = ChunkWait(chunks: wait.chunks)
        follow(
            wait, into: answer, handle: handle, offset: offset, count: count, readerName: readerName, retries: retries)
        return answer
    }

    /// Ends `answer` as `wait` ends, unless `wait` ends because its download was cancelled
    /// (`.stale`): then the read is prepared again — off the thread that cancelled, which may
    /// hold the tree's lock — and `answer` follows the new wait, or ends at once if the bytes are
    /// there now. `answer` ended meanwhile (an interrupt, the session's end) stops the retries.
    /// The new preparation starts only once the request that cancelled (a truncating `open` or
    /// `setattr`) has been answered (`AfterReply`): the kernel knows the new size only then.
    private func follow(
        _ wait: ChunkWait, into answer: ChunkWait, handle: OpenFile, offset: Int64, count: Int, readerName: String?,
        retries: Int
    ) {
        answer.standFor(wait)
        wait.onEnd { [self] outcome in
            guard outcome == .stale, retries > 0 else {
                answer.end(outcome)
                return
            }
            AfterReply.run {
                DispatchQueue.global().async { [self] in
                    prepareAgain(
                        into: answer, handle: handle, offset: offset, count: count, readerName: readerName,
                        retries: retries - 1)
                }
            }
        }
    }

    /// `follow`'s new preparation of a read whose download was cancelled.
    private func prepareAgain(
        into answer: ChunkWait, handle: OpenFile, offset: Int64, count: Int, readerName: String?, retries: Int
    ) {
        // The transaction that cancelled (truncating, replacing) may still be under way: prepare
        // the read against what it leaves.
        live.transact { _ in }
        guard !answer.hasEnded else { return }
        var retriesLeft = retries
        do throws(FSError) {
            guard
                let next = try readWait(
                    handle, offset: offset, count: count, retries: &retriesLeft, processName: { readerName })
            else {
                answer.end(nil)
                return
            }
            follow(
                next, into: answer, handle: handle, offset: offset, count: count, readerName: readerName,
                retries: retriesLeft)
        } catch {
            answer.end(error)
        }
    }

    /// One preparation of a read (see `prepareRead`), again while the download it found is
    /// cancelled before the wait could be taken (`.stale`) and `retries` last.
    private func readWait(
        _ handle: OpenFile, offset: Int64, count: Int, retries: inout Int, processName: () -> String?
    ) throws(FSError) -> ChunkWait? {
        while true {
            do {
                return try readWaitOnce(handle, offset: offset, count: count, processName: processName)
            } catch .stale where retries > 0 {
                retries -= 1
            }
        }
    }

    /// One preparation of a read (see `prepareRead`): nil when the bytes are in the cache file.
    private func readWaitOnce(_ handle: OpenFile, offset: Int64, count: Int, processName: () -> String?)
        throws(FSError) -> ChunkWait?
    {
        // The check mark before the content's place: the discard of a damaged copy (by another
        // READ in flight beside this one) makes the file a placeholder before it clears the mark,
        // so a mark seen cleared here is never followed by a stale "local" (the damaged bytes).
        let unverified = handle.node.contentUnverified.load(ordering: .acquiring)
        if handle.node.contentIsLocal {
            // Lost content: no bytes to give (`ContentLifecycle.hydrationStarted`).
            if handle.node.contentLost { throw .io(EIO) }
            // The first reads after a mount check the cached copy (a damaged one becomes a
            // placeholder, downloaded: the reader waits for its chunks like any placeholder's).
            guard unverified else { return nil }
            return try residency.contentWait(handle, offset: offset, count: count)
        }
        if hydrations.downloadsExcluded(for: processName)
            && !hydrations.contentPresent(handle, offset: offset, count: count)
        {
            throw .accessDenied
        }
        return try residency.contentWait(handle, offset: offset, count: count)
    }
}
