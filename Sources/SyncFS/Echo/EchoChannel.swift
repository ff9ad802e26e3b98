import Synchronization

/// The running inotify echo as both of its sides see it: the follower's (`RemoteEcho`), which
/// hands structural changes to the echo thread, and the kernel's (`EchoRequests`), which
/// recognises the echo thread's requests and applies the change they carry; and as the tree
/// sees it (`OwnMountCalls`). See `InotifyEcho`.
final class EchoChannel: OwnMountCalls {
    /// The running echo; nil when off.
    private let running = Mutex<InotifyEcho?>(nil)
    /// Whether a process could see the echo's events; set with the echo.
    private let census = Mutex<WatcherCensus?>(nil)
    /// The echo thread's kernel thread id (0: no echo); FUSE requests it makes carry it as pid.
    private let threadID = Atomic<Int32>(0)
    /// The echo thread's calls against entry invalidations; outlives a stopped echo, whose last
    /// call may still be in the kernel.
    private let calls = EchoCallExclusion()

    /// Starts echoing remote changes through `mountpoint` (the session must be mounted).
    /// `prepareThread` runs first on the echo thread (the daemon isolates it from `/dev/fuse`);
    /// if it fails, there is no echo. `skipsUnwatchedBursts`: bursts of remote changes skip the
    /// echo while no process may be watching the mount (`RemoteEcho`); `othersMayEnter`: the
    /// mount has `allow_other` (see `WatcherCensus`).
    func start(
        mountpoint: String, skipsUnwatchedBursts: Bool = false, othersMayEnter: Bool = false, timeout: Double = 2,
        prepareThread: @escaping @Sendable () -> Bool = { true }
    ) {
        calls.start()
        census.withLock {
            $0 = skipsUnwatchedBursts ? WatcherCensus(mountpoint: mountpoint, othersMayEnter: othersMayEnter) : nil
        }
        let echo = InotifyEcho(mountpoint: mountpoint, timeout: timeout, calls: calls, prepare: prepareThread) {
            [weak self] tid in
            self?.threadID.store(tid, ordering: .relaxed)
        }
        running.withLock { $0 = echo }
    }

    /// Stops the echo (the session's loop has ended: no request of the echo thread is answered
    /// any more): remote changes are applied directly from now on, and entry invalidations are
    /// dropped while its last call stays in the kernel (`EchoCallExclusion`).
    func stop() {
        running.withLock { echo in
            echo?.stop()
            echo = nil
        }
        calls.stop()
        threadID.store(0, ordering: .relaxed)
    }

    /// The running echo, if any.
    var current: InotifyEcho? { running.withLock { $0 } }

    /// Whether a process may be watching the mount (always "watched" when bursts are echoed
    /// anyway).
    var watchers: WatcherCensus.Finding {
        census.withLock { $0 }?.finding() ?? WatcherCensus.Finding(watched: true)
    }

    /// True while a step of the echo thread is running: its call on the mount may be in the
    /// kernel (see `LiveTree.perform`, which holds entry invalidations back meanwhile).
    var stepInKernel: Bool { current?.isStepRunning ?? false }

    func whileNoCallInKernel(_ send: () -> Void) -> Bool { calls.whileNoCallInKernel(send) }

    /// True if a FUSE request with this pid comes from the echo thread (one atomic load).
    @inline(__always)
    func isEchoRequest(pid: Int32) -> Bool {
        let tid = threadID.load(ordering: .relaxed)
        return tid != 0 && pid == tid
    }

    /// The echo thread's kernel thread id, 0 when there is none (tests).
    var echoThreadID: Int32 { threadID.load(ordering: .relaxed) }

    /// Steps the echo completed and steps that timed out since the mount (tests, log).
    var statistics: (completed: Int, timedOut: Int)? {
        running.withLock { echo in echo.map { ($0.completedSteps, $0.timedOutSteps) } }
    }
}
