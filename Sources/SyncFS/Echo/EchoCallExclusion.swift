import Foundation

/// Keeps the echo thread's calls on the mount and the daemon's entry invalidations out of the
/// kernel at the same time (see `OwnMountCalls`).
///
/// The cycle it breaks: a call of the echo thread (mknod, mkdir, unlink, rename; a touch's path
/// walk) holds its directory's lock (`i_rwsem`) in the kernel while it waits for this daemon's
/// answer, and an entry invalidation written to `/dev/fuse` (`fuse_reverse_inval_entry`) takes
/// that same lock: its writer waits in the kernel until the answer came. Once the session's loop
/// has ended, no answer comes (the request is never read, or read and dropped) until `/dev/fuse`
/// is released — which the writer, blocked in `writev` on it, prevents. Neither returns: the
/// daemon's shutdown waits for the writer's thread forever, and a kill leaves a zombie with the
/// writer in `fuse_reverse_inval_entry` and the echo thread in `request_wait_answer`.
///
/// Contract, under one condition, so that no entry invalidation ever waits in the kernel for a
/// call of the echo thread:
/// - the echo thread enters the kernel only while no entry invalidation is being written
///   (`enterCall`), and never once the echo stopped;
/// - entry invalidations are written only while no call of the echo thread is in the kernel
///   (`whileNoCallInKernel`); both sides wait in user space, where a kill ends the wait;
/// - once the echo stopped (the session ended: `EchoChannel.stop`), a call still in the kernel
///   may never return: entry invalidations are then dropped instead of waiting for it (the mount,
///   and the kernel's caches of it, are going away).
final class EchoCallExclusion: @unchecked Sendable {
    private let condition = NSCondition()
    private var callInKernel = false
    private var invalidationsInKernel = 0
    private var stopped = false

    /// The echo thread, before its call on the mount: waits until no entry invalidation is being
    /// written, then counts the call as in the kernel. False (no call may be made) once stopped.
    func enterCall() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while invalidationsInKernel > 0 && !stopped { condition.wait() }
        guard !stopped else { return false }
        callInKernel = true
        return true
    }

    /// The echo thread, once its call on the mount returned.
    func leaveCall() {
        condition.lock()
        callInKernel = false
        condition.broadcast()
        condition.unlock()
    }

    /// Runs `send` (entry invalidations) once no call of the echo thread is in the kernel; none
    /// enters until it returned. Returns false without running it if the echo stopped while its
    /// call is still in the kernel.
    func whileNoCallInKernel(_ send: () -> Void) -> Bool {
        condition.lock()
        while callInKernel && !stopped { condition.wait() }
        guard !callInKernel else {
            condition.unlock()
            return false
        }
        invalidationsInKernel += 1
        condition.unlock()
        send()
        condition.lock()
        invalidationsInKernel -= 1
        condition.broadcast()
        condition.unlock()
        return true
    }

    /// The echo starts: its thread may make calls again.
    func start() {
        condition.lock()
        stopped = false
        condition.unlock()
    }

    /// The echo stopped (the session ended): no call enters the kernel any more, and waiting
    /// entry invalidations are sent, or dropped if a call is still in the kernel.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }
}
