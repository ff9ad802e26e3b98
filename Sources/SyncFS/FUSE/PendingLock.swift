import CFuse
import Dispatch
import Foundation
import Synchronization

/// A lock request (getlk, setlk, flock, and the flush or unlock that ends locks) answered later,
/// from the lock thread (`MountLocks`), so that no FUSE worker waits for the container or for
/// another holder.
///
/// Reply exactly once: `answer` claims the request first (an atomic flag), so a late outcome
/// after `PendingLocks.endAll` does nothing. An interruptible request registers libfuse's
/// interrupt callback before anything can answer it (the request is never used after its reply),
/// and the reply unregisters it first: `fuse_req_interrupt_func(req, nil, nil)` takes the
/// request's lock, which libfuse holds while it runs the callback, so after it no callback runs
/// and the retained reference libfuse held can be released. The callback only hands the
/// interrupt to another thread (cancelling may answer at once, whose unregistering would wait for
/// the lock the callback's own thread holds).
final class PendingLock: @unchecked Sendable {
    private let request: fuse_req_t
    private let book: PendingLocks
    /// Set once answered (by the outcome or by `PendingLocks.endAll`).
    private let claimed = Atomic<Bool>(false)
    /// Whether libfuse holds a retained reference for the interrupt callback.
    private let registered: Bool
    /// What an interrupt does (cancel the `LockWaiter`), and whether one came before it was set.
    private let interruption = Mutex<(action: (@Sendable () -> Void)?, early: Bool)>((nil, false))

    private init(_ request: fuse_req_t, registered: Bool, book: PendingLocks) {
        self.request = request
        self.registered = registered
        self.book = book
    }

    /// Books `req`; with `interruptible`, a FUSE INTERRUPT of it runs the action `onInterrupt`
    /// sets (at once if it came before).
    static func start(_ req: fuse_req_t, interruptible: Bool, in book: PendingLocks) -> PendingLock {
        let pending = PendingLock(req, registered: interruptible, book: book)
        book.add(pending)
        if interruptible {
            // Runs the callback at once if the kernel interrupted the request already.
            fuse_req_interrupt_func(req, pendingLockInterrupted, Unmanaged.passRetained(pending).toOpaque())
        }
        return pending
    }

    /// What an interrupt does; runs it at once if one came already.
    func onInterrupt(_ action: @escaping @Sendable () -> Void) {
        let early = interruption.withLock { state -> Bool in
            state.action = action
            return state.early
        }
        if early { action() }
    }

    fileprivate func interrupted() {
        let action = interruption.withLock { state -> (@Sendable () -> Void)? in
            state.early = true
            return state.action
        }
        action?()
    }

    /// Sends the reply `body` makes, unless the request was answered already. True if this call
    /// answered it.
    @discardableResult
    func answer(_ body: (fuse_req_t) -> Void) -> Bool {
        guard claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        if registered {
            fuse_req_interrupt_func(request, nil, nil)
            Unmanaged.passUnretained(self).release()
        }
        body(request)
        book.remove(self)
        return true
    }

    func answer(errno: Int32) { answer { fuse_reply_err($0, errno) } }
}

/// libfuse's interrupt callback for a `PendingLock` (called with the request's lock held).
private func pendingLockInterrupted(_ req: fuse_req_t?, _ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    let pending = Unmanaged<PendingLock>.fromOpaque(data).takeUnretainedValue()
    DispatchQueue.global().async { pending.interrupted() }
}

/// The lock requests of one session not answered yet. Every one must be answered before the
/// session is destroyed (`FuseSession.run` ends them all when the loop returns: ENOTCONN, as
/// from a mount that is gone); an outcome that comes later finds them answered.
final class PendingLocks: Sendable {
    private let pending = Mutex<[ObjectIdentifier: PendingLock]>([:])
    private let changed = NSCondition()

    fileprivate func add(_ lock: PendingLock) {
        pending.withLock { $0[ObjectIdentifier(lock)] = lock }
    }

    fileprivate func remove(_ lock: PendingLock) {
        changed.lock()
        pending.withLock { $0[ObjectIdentifier(lock)] = nil }
        changed.broadcast()
        changed.unlock()
    }

    /// Answers every request still waiting with `errno`, and returns once every reply under way
    /// has been sent (at most `replyWaitLimit`).
    func endAll(errno: Int32) {
        for lock in pending.withLock({ Array($0.values) }) { lock.answer(errno: errno) }
        let deadline = Date().addingTimeInterval(5)
        changed.lock()
        while !pending.withLock({ $0.isEmpty }) && changed.wait(until: deadline) {}
        changed.unlock()
    }

    var count: Int { pending.withLock { $0.count } }
}
