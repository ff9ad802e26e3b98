import CFuse
import Dispatch
import Foundation
import Glibc
import Synchronization

/// A READ of a placeholder whose bytes are still downloading, answered when its `ChunkWait` ends —
/// from whichever thread ends it — instead of by a worker thread blocked until then. So readers
/// waiting on a server that does not answer hold no worker thread (other requests are served at
/// once however many wait), and a reader the kernel interrupts (FUSE INTERRUPT) for a signal that
/// asks it to stop (`InterruptingSignals`) is answered EINTR at once; the download goes on for
/// whoever else wants it.
///
/// Asynchronous reads are on (`FuseBackgroundLimits`): a READ may be the kernel's readahead, a
/// background request no task waits in, for which the kernel sends no INTERRUPT while its reader
/// waits killably for the page. So the reading threads' pending signals are looked at from the
/// start, every 200 ms (`PendingReads`: one look per reading thread, however many of its READs
/// wait), not only after an INTERRUPT: a stopping one ends the READ with EINTR, the page stays
/// not up to date, and the reader falls back to a synchronous read of it, which the kernel
/// interrupts at once (EINTR from `read`).
///
/// Reply exactly once: the wait ends once (`ChunkWait`), and only its end replies. The interrupt
/// callback is registered with libfuse before the wait can end (so the request is never used after
/// its reply), and unregistered by the reply before it answers: `fuse_req_interrupt_func(req, nil)`
/// takes the request's lock, which libfuse holds while it runs the callback, so after it no
/// callback runs and the retained pointer libfuse held can be released. The callback itself only
/// hands the interrupt to another thread: ending the wait there would reply, and the reply's
/// unregistering would wait for the lock the callback's own thread holds.
final class PendingRead: @unchecked Sendable {
    private let request: fuse_req_t
    private let handle: OpenFile
    private let size: Int
    private let offset: off_t
    let wait: ChunkWait
    /// The reading thread (the request's caller), whose pending signals decide (`InterruptingSignals`).
    let reader: pid_t

    private init(request: fuse_req_t, handle: OpenFile, size: Int, offset: off_t, wait: ChunkWait) {
        self.request = request
        self.handle = handle
        self.size = size
        self.offset = offset
        self.wait = wait
        reader = fuse_req_ctx(request)?.pointee.pid ?? 0
    }

    /// The kernel interrupted the request: ends the read with EINTR if the signal asks the program
    /// to stop (`InterruptingSignals`); otherwise the read goes on (`PendingReads` looks for a
    /// stopping signal that comes later).
    func interrupted() {
        if InterruptingSignals.endsRead(ofThread: reader) { wait.end(.io(EINTR)) }
    }

    /// Answers `req` (a READ of `size` bytes at `offset` through `handle`) when `wait` ends: with
    /// the bytes from the cache file, the download's error, or EINTR if the kernel interrupts it.
    static func start(
        _ req: fuse_req_t, handle: OpenFile, size: Int, offset: off_t, wait: ChunkWait, in book: PendingReads
    ) {
        let pending = PendingRead(request: req, handle: handle, size: size, offset: offset, wait: wait)
        book.add(pending)
        let forCallback = Unmanaged.passRetained(pending)
        // Runs the callback at once if the kernel interrupted the request already.
        fuse_req_interrupt_func(req, pendingReadInterrupted, forCallback.toOpaque())
        wait.onEnd { outcome in pending.reply(outcome, releasing: forCallback, from: book) }
    }

    private func reply(_ outcome: FSError?, releasing forCallback: Unmanaged<PendingRead>, from book: PendingReads) {
        fuse_req_interrupt_func(request, nil, nil)
        forCallback.release()
        defer { book.remove(self) }
        if let outcome {
            replyError(request, outcome)
        } else {
            replyFromCacheFile(request, handle, size: size, offset: offset)
        }
    }
}

/// The reads of one session not answered yet. A request belongs to its session: every one must be
/// answered before the session is destroyed (`FuseSession.run` ends them all when the loop
/// returns; a download that ends later finds them answered), or its reply would use freed memory.
///
/// While any wait, a look every `signalLookMilliseconds` at each reading thread's pending signals
/// (`/proc/TID/status`, once per thread however many of its READs wait) ends the READs of a
/// thread with a stopping signal pending (`InterruptingSignals`) with EINTR: the kernel sends no
/// INTERRUPT for readahead.
final class PendingReads: Sendable {
    private struct Waiting {
        var reads: [ObjectIdentifier: PendingRead] = [:]
        /// Whether a look is scheduled (none while nothing waits).
        var looking = false
        /// Goes up with every read added or removed (what `endAll` waits for).
        var generation: UInt64 = 0
    }

    static let signalLookMilliseconds = 200
    private let waiting = Mutex(Waiting())
    /// Broadcast after every change of `generation`.
    private let changed = NSCondition()

    fileprivate func add(_ read: PendingRead) {
        let startLooking = waiting.withLock { state -> Bool in
            state.reads[ObjectIdentifier(read)] = read
            state.generation &+= 1
            defer { state.looking = true }
            return !state.looking
        }
        announceChange()
        if startLooking { scheduleLook() }
    }

    fileprivate func remove(_ read: PendingRead) {
        waiting.withLock { state in
            state.reads[ObjectIdentifier(read)] = nil
            state.generation &+= 1
        }
        announceChange()
    }

    private func announceChange() {
        changed.lock()
        changed.broadcast()
        changed.unlock()
    }

    private func scheduleLook() {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Self.signalLookMilliseconds)) { [self] in
            lookForStoppingSignals()
        }
    }

    /// Ends the reads whose thread has a stopping signal pending; schedules the next look while
    /// any read waits.
    private func lookForStoppingSignals() {
        let byReader = waiting.withLock { state -> [pid_t: [PendingRead]]? in
            if state.reads.isEmpty {
                state.looking = false
                return nil
            }
            return Dictionary(grouping: state.reads.values, by: \.reader)
        }
        guard let byReader else { return }
        for (reader, reads) in byReader where InterruptingSignals.stoppingSignalPending(forThread: reader) {
            for read in reads { read.wait.end(.io(EINTR)) }
        }
        scheduleLook()
    }

    /// Answers every read still waiting with `error` (the session is ending), and returns once
    /// every reply has been sent: a wait ended just before by a download, an interrupt or the
    /// signal look may still be replying on another thread, and the session must outlive that
    /// reply (each removes its read after replying). Gives up after `replyWaitLimit`.
    func endAll(with error: FSError) {
        let (seconds, attoseconds) = Self.replyWaitLimit.components
        let deadline = Date().addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
        while true {
            // Again each round: a worker thread still finishing a request may have added one.
            let (reads, seen) = waiting.withLock { (Array($0.reads.values), $0.generation) }
            for read in reads { read.wait.end(error) }
            if reads.isEmpty || Date() >= deadline { return }
            // Until a read is removed (or added): a change after `seen` was read is never missed,
            // as it is announced under `changed`'s lock, which this wait holds or releases.
            changed.lock()
            while waiting.withLock({ $0.generation }) == seen && changed.wait(until: deadline) {}
            changed.unlock()
        }
    }

    /// How long `endAll` waits for replies under way.
    static let replyWaitLimit: Duration = .seconds(5)

    var count: Int { waiting.withLock { $0.reads.count } }
}

/// libfuse's interrupt callback for a `PendingRead` (called with the request's lock held).
private func pendingReadInterrupted(_ req: fuse_req_t?, _ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    let pending = Unmanaged<PendingRead>.fromOpaque(data).takeUnretainedValue()
    DispatchQueue.global().async { pending.interrupted() }
}

/// Replies to a READ straight from the handle's cache file: libfuse splices or reads it without a
/// Swift buffer. The bytes must be there (a local file, or chunks a `ChunkWait` waited for).
///
/// Spliced without `FUSE_BUF_SPLICE_MOVE` (as `passthrough_hp` does): asked to move, the kernel
/// first tries to steal each of the cache file's page-cache folios (locking it, sometimes waiting
/// for it), fails — they belong to the cache file — and copies anyway. Without the attempt a cold
/// 1 GiB read took 11 % less daemon CPU and ran 6.5 % faster (doc/performance-log.md, "Replies
/// copied, not moved").
func replyFromCacheFile(_ req: fuse_req_t?, _ handle: OpenFile, size: Int, offset: off_t) {
    var buffer = fuse_bufvec()
    buffer.count = 1
    buffer.buf.size = size
    buffer.buf.flags = fuse_buf_flags(rawValue: FUSE_BUF_IS_FD.rawValue | FUSE_BUF_FD_SEEK.rawValue)
    buffer.buf.fd = handle.descriptor
    buffer.buf.pos = offset
    fuse_reply_data(req, &buffer, fuse_buf_copy_flags(rawValue: 0))
}
