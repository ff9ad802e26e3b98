import Foundation
import Glibc
import SyncBackend

/// systemd's notify protocol (sd_notify(3)), spoken by a `--foreground` daemon that systemd runs
/// as `Type=notify`: `READY=1` once the mount is live, `STATUS=…` whenever the engine's summary
/// changes (checked once a second), `WATCHDOG=1` every half of `WATCHDOG_USEC` while the daemon
/// is healthy, `STOPPING=1` when the session ends.
///
/// Healthy means, each time: the FUSE loop answered a `statvfs` of the mount point (a request
/// through the kernel to the workers, never cached) within the last watchdog interval, and the
/// engine answered `status()` (its state lock and the outbox). A hung loop leaves the FUSE check
/// stale and a deadlocked engine blocks the reporting thread: either way the pings stop and
/// systemd restarts the service (`WatchdogSec=`, `Restart=on-failure`).
///
/// The environment is read once (`fromEnvironment`) and `NOTIFY_SOCKET`, `WATCHDOG_USEC` and
/// `WATCHDOG_PID` are removed from it, so processes the daemon starts (merge commands) do not
/// inherit them. Without `NOTIFY_SOCKET` nothing is sent.
final class SystemdNotifier: @unchecked Sendable {
    /// The socket address (`@…` is the abstract namespace).
    private let socketPath: String
    /// Seconds between watchdog pings, nil without `WATCHDOG_USEC` (or when it names another pid).
    let watchdogInterval: Double?
    private let stopped = NSLock()
    private var isStopped = false
    /// The FUSE check's thread and the reporting thread (`mountIsLive`), stopped by `stopping()`.
    private let prober = Worker("syncfs-systemd-probe")
    private let reporter = Worker("syncfs-systemd")

    init?(socketPath: String?, watchdogMicroseconds: String?, watchdogPID: String?) {
        guard let socketPath, socketPath.hasPrefix("/") || socketPath.hasPrefix("@"),
            socketPath.utf8.count < 108
        else { return nil }
        self.socketPath = socketPath
        let forUs = watchdogPID.map { Int32($0) == getpid() } ?? true
        if forUs, let text = watchdogMicroseconds, let microseconds = UInt64(text), microseconds > 0 {
            watchdogInterval = Double(microseconds) / 2_000_000
        } else {
            watchdogInterval = nil
        }
    }

    /// The notifier systemd asked for, or nil; either way the variables leave the environment.
    static func fromEnvironment() -> SystemdNotifier? {
        let names = ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"]
        let values = names.map { getenv($0).map { String(cString: $0) } }
        for name in names { unsetenv(name) }
        return SystemdNotifier(socketPath: values[0], watchdogMicroseconds: values[1], watchdogPID: values[2])
    }

    /// Sends one datagram (`KEY=VALUE` lines). False if it could not be sent.
    @discardableResult
    func send(_ message: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in pathBytes.enumerated() { raw[index] = byte }
        }
        let length = MemoryLayout<sa_family_t>.size + pathBytes.count + (abstract ? 0 : 1)
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, socklen_t(length))
            }
        }
        return sent == bytes.count
    }

    /// The checks `mountIsLive` runs. `fuseAnswers` runs on a thread of its own that first calls
    /// `isolate` (it makes calls on the daemon's own mount: see
    /// `FuseSession.isolateCallingThreadFromDevice`); `status` runs on the reporting thread, which
    /// keeps the process's descriptor table (the engine reads the database and the cache).
    struct Probes: Sendable {
        var isolate: @Sendable () -> Void
        var fuseAnswers: @Sendable () -> Bool
        var status: @Sendable () -> String

        init(
            isolate: @escaping @Sendable () -> Void, fuseAnswers: @escaping @Sendable () -> Bool,
            status: @escaping @Sendable () -> String
        ) {
            self.isolate = isolate
            self.fuseAnswers = fuseAnswers
            self.status = status
        }
    }

    /// Seconds between two looks at the status (a cheap `SyncSummary`, no walk of the tree).
    private var period: Double { min(1, watchdogInterval ?? 1) }
    /// Seconds between two FUSE checks: three per watchdog interval (every 10 s with the units'
    /// `WatchdogSec=60`), at most one a second; nil (no checks) without a watchdog.
    private var probePeriod: Double? { watchdogInterval.map { max(min(1, $0), $0 / 3) } }
    /// When the FUSE check last came back (guarded by `stopped`).
    private var lastFuseAnswer = Date.distantPast

    /// Called once the mount is live: `READY=1` with `status`, then two threads until
    /// `stopping()`: one runs `probes.fuseAnswers` every second; the other sends `probes.status`
    /// when it changes and `WATCHDOG=1` when due, if the FUSE check came back within the last
    /// watchdog interval (at least 3 s) and `status` itself returned. Nothing runs on the calling
    /// thread (the daemon's main thread, which has not started the FUSE loop yet).
    func mountIsLive(status first: String, probes: Probes) {
        send("READY=1\nSTATUS=\(first)")
        // The FUSE check only feeds the watchdog: without one, nothing probes the mount.
        if let probePeriod {
            prober.start { [self] worker in
                probes.isolate()
                while !stopped.withLock({ isStopped }) {
                    if probes.fuseAnswers() { stopped.withLock { lastFuseAnswer = Date() } }
                    worker.sleep(for: .seconds(probePeriod))
                }
            }
        }
        reporter.start { [self] worker in report(lastStatus: first, status: probes.status, on: worker) }
    }

    private func report(lastStatus: String, status: () -> String, on worker: Worker) {
        var last = lastStatus
        var lastPing = Date.distantPast
        let freshness = max(3 * (probePeriod ?? period), watchdogInterval ?? 0)
        while !stopped.withLock({ isStopped }) {
            let line = status()
            let (ended, fuseAnswered) = stopped.withLock { (isStopped, lastFuseAnswer) }
            if ended { break }
            if line != last {
                send("STATUS=\(line)")
                last = line
            }
            if let interval = watchdogInterval, Date().timeIntervalSince(lastPing) >= interval * 0.9,
                Date().timeIntervalSince(fuseAnswered) < freshness
            {
                send("WATCHDOG=1")
                lastPing = Date()
            }
            worker.sleep(for: .seconds(period))
        }
    }

    /// The session ended: `STOPPING=1`, and the reporting thread stops.
    func stopping() {
        stopped.withLock { isStopped = true }
        prober.stop()
        reporter.stop()
        send("STOPPING=1\nSTATUS=unmounting")
    }
}

extension SystemdNotifier {
    /// `mountIsLive` for a daemon: the FUSE check is a `statvfs` of the mount point (a request
    /// through the kernel to the workers, never answered from a cache), the status the engine's.
    func mountIsLive(session: FuseSession, engine: SyncEngine, mountpoint: String) {
        let probes = Probes(
            isolate: { _ = session.isolateCallingThreadFromDevice() },
            fuseAnswers: {
                var info = statvfs()
                return statvfs(mountpoint, &info) == 0
            },
            status: { engine.summary().line })
        mountIsLive(status: engine.summary().line, probes: probes)
    }
}

extension SyncStatus {
    /// The same line as `SyncSummary.line`, from a full status.
    var summaryLine: String {
        SyncSummary(
            online: online, changesWaiting: pendingEntries, caughtUp: feedCaughtUp, conflicts: conflicts,
            guardHeld: massDeleteGuard?.held == true, paused: paused != nil
        ).line
    }
}
