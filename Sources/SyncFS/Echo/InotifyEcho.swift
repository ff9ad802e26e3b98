import Foundation
import Glibc
import SyncBackend
import Synchronization

/// Makes the kernel emit inotify events for remote changes.
///
/// The kernel emits inotify events from its VFS calls (create, unlink, rename, notify_change,
/// close), never for a FUSE cache invalidation, so a change the daemon applies by itself is
/// invisible to programs that watch the folder with inotify. The echo thread makes the kernel
/// see each remote change as a VFS call on the mount point:
///
/// - **Structural changes go through the mount** (`EchoStep.create`, `.remove`, `.move`): the
///   echo thread calls mknod/mkdir/symlink, unlink/rmdir or renameat2(RENAME_NOREPLACE) on the
///   mount; the FUSE handler, seeing the echo thread's id as the request's pid
///   (`EchoRequests`), applies the pending remote change (`EchoCall`: the follower's own code,
///   `RemoteApplying`, under the same lock as a direct apply) and replies as if the call had
///   done it, so the kernel updates its dentries and emits IN_CREATE, IN_DELETE,
///   IN_MOVED_FROM/IN_MOVED_TO. Invalidations are sent after the call returns (the kernel holds
///   the directory locks during it).
/// - **Content and attributes are echoed after the fact** (`EchoTouch`): the change is applied
///   directly, then the echo thread calls open(O_WRONLY), truncate(path, same size), close
///   (IN_OPEN, IN_MODIFY, IN_CLOSE_WRITE) or chmod(same mode) / lchown(same owner) for symlinks
///   (IN_ATTRIB); the handlers change nothing for the echo thread (no download, no outbox entry,
///   no mtime, not counted as a writer).
///
/// Robustness: one step at a time; a caller waits at most `timeout` for the echo thread, then
/// withdraws the pending change and applies it directly. While a step is stuck (a hung mount),
/// later changes skip the echo. Any failure of the call falls back to applying directly. A step's
/// calls and the daemon's entry invalidations are never in the kernel together
/// (`EchoCallExclusion`).
///
/// The echo's parts (all in `Echo/`): this thread; `EchoChannel`, the running echo its two sides
/// share; `RemoteEcho`, the follower's side; `EchoRequests` and `EchoCall`, the kernel's side;
/// `PendingSlot`, the change a step carries; `BeneathMount`, the calls on the mount.
final class InotifyEcho: @unchecked Sendable {
    /// The echo thread's calls on the mount, below a descriptor of its root (never a host path
    /// built from names). Used on the echo thread only.
    private let beneathMount: BeneathMount
    /// How long a caller waits for one echo call.
    let timeout: Double
    /// Serialises callers (the follower; the uploader's forced applies).
    let turn = NSLock()
    /// The remote change the current through-the-mount step carries (see `PendingSlot`).
    let pending = Mutex<PendingSlot>(.empty)
    /// Each step's calls enter the kernel only while no entry invalidation is being written.
    private let calls: EchoCallExclusion

    private let condition = NSCondition()
    private var job: (() -> Int32)?
    private var finished: Int32?
    private var running = false
    private var stopped = false
    private var completed = 0
    private var timedOut = 0

    /// Steps that completed and steps that timed out (for the log and tests).
    var completedSteps: Int { counted { completed } }
    var timedOutSteps: Int { counted { timedOut } }

    private func counted(_ value: () -> Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        return value()
    }

    /// Starts the echo thread, which first runs `prepare` (see
    /// `FuseSession.isolateCallingThreadFromDevice`; false: no echo); `started` receives its
    /// kernel thread id (what FUSE requests made by it carry as their pid).
    init(
        mountpoint: String, timeout: Double = 2, calls: EchoCallExclusion = EchoCallExclusion(),
        prepare: @escaping @Sendable () -> Bool = { true }, started: @escaping @Sendable (Int32) -> Void
    ) {
        beneathMount = BeneathMount(mountpoint: mountpoint)
        self.timeout = timeout
        self.calls = calls
        Worker.start("syncfs-echo") { [self] _ in
            guard prepare() else { return stop() }
            started(Self.currentThreadID())
            loop()
        }
    }

    /// True while a step has been handed to the echo thread and has not returned: its call may
    /// hold directory locks in the kernel while it waits for the daemon's answer.
    var isStepRunning: Bool {
        condition.lock()
        defer { condition.unlock() }
        return running || job != nil
    }

    /// False while stopped or while a step is still running (stuck): callers apply directly.
    var isAvailable: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !stopped && !running && job == nil
    }

    /// Runs `body` on the echo thread and returns its result (an errno, 0 for success), or nil if
    /// the thread is stopped, busy, or did not finish within `timeout`.
    func run(_ body: @escaping () -> Int32) -> Int32? {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, !running, job == nil else { return nil }
        job = body
        finished = nil
        condition.broadcast()
        let deadline = Date().addingTimeInterval(timeout)
        while finished == nil && Date() < deadline {
            _ = condition.wait(until: deadline)
        }
        guard let result = finished else {
            timedOut += 1
            return nil
        }
        finished = nil
        completed += 1
        return result
    }

    /// Ends the thread (after its current step, if any).
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    private func loop() {
        condition.lock()
        while true {
            while job == nil && !stopped { condition.wait() }
            guard !stopped, let body = job else { break }
            job = nil
            running = true
            condition.unlock()
            var result = ECANCELED
            if calls.enterCall() {
                result = body()
                calls.leaveCall()
            }
            condition.lock()
            running = false
            finished = result
            condition.broadcast()
        }
        condition.unlock()
    }

    /// The calling thread's kernel id (gettid(2), which Glibc's overlay lacks): the last component
    /// of `/proc/thread-self` (`PID/task/TID`).
    static func currentThreadID() -> Int32 {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return 0 }
        let text = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: "/").last.flatMap { Int32($0) } ?? 0
    }

    /// Performs a step on the calling thread (the echo thread); returns 0 or an errno.
    func perform(_ step: EchoStep) -> Int32 {
        switch step {
        case .create(let location, let kind, let target):
            return beneathMount.create(location, kind: kind, target: target)
        case .remove(let location, let isDirectory):
            return beneathMount.remove(location, isDirectory: isDirectory)
        case .move(let source, let destination):
            // A plain rename: the destination was free in the tree, and the handler checks again.
            return beneathMount.move(source, to: destination)
        }
    }

    /// Performs a touch on the calling thread (the echo thread); returns 0 or an errno.
    func perform(_ touch: EchoTouch) -> Int32 {
        switch touch {
        case .content(let location, let size):
            return beneathMount.touchContent(location, size: size)
        case .attributes(let location, let kind, let mode, let uid):
            return beneathMount.touchAttributes(location, kind: kind, mode: mode, uid: uid)
        }
    }
}
