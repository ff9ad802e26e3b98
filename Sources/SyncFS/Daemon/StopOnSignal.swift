import Foundation
import Glibc
import Logging
import SyncBackend
import Synchronization

/// How a running daemon stops on SIGINT (Ctrl-C), SIGTERM or SIGHUP (doc/CLI.md, "Stopping a
/// mount"), as `unmount` does: the first signal uploads what is queued — the mount stays live
/// meanwhile, and its progress is logged (`StopProgress`) — for at most `drainDeadline`
/// seconds, then ends the session; a second signal ends it at once and says how many changes
/// stay queued for the next mount. A queue held by the mass-delete guard, or by a pause, is not
/// waited for (a paused mount stays paused: its queue waits for `resume` after the next mount).
///
/// The handlers only write the signal's number into a pipe (async-signal-safe); a thread of its
/// own reads it and does the work. They stay installed after the session ended, so a late signal
/// cannot kill the daemon while it commits its state.
final class StopOnSignal: @unchecked Sendable {
    /// Seconds the first signal waits for the queue before stopping anyway.
    static let drainDeadline: Double = 30
    static let signals = [SIGINT, SIGTERM, SIGHUP]

    private let session: FuseSession
    private let engine: SyncEngine
    private let logger: Logger
    private let ended = Mutex(false)

    private init(session: FuseSession, engine: SyncEngine, logger: Logger) {
        self.session = session
        self.engine = engine
        self.logger = logger
    }

    /// Installs the handlers and starts the thread that stops `session` on a signal (nil if
    /// it cannot: the signals then end the process). The signals are unblocked: a daemon started
    /// in the background inherits them blocked or ignored.
    @discardableResult
    static func install(session: FuseSession, engine: SyncEngine, logger: Logger) -> StopOnSignal? {
        guard let reader = SignalPipe.open() else {
            logger.warning("no pipe for stop signals: SIGINT and SIGTERM end the daemon without committing its state")
            return nil
        }
        let stopper = StopOnSignal(session: session, engine: engine, logger: logger)
        // Never stopped: it waits for a signal for the daemon's whole life.
        Worker.start("syncfs-stop") { _ in stopper.serve(reader) }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in SignalPipe.note(number) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        for signal in signals {
            sigaction(signal, &action, nil)
            sigaddset(&unblocked, signal)
        }
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
        return stopper
    }

    /// The session ended (`FuseSession.run` returned): a signal from now on does nothing.
    func sessionEnded() {
        ended.withLock { $0 = true }
    }

    /// The first signal: drain, then end the session. Later signals arrive while draining.
    private func serve(_ reader: Int32) {
        guard let first = SignalPipe.wait(reader, seconds: nil), !ended.withLock({ $0 }) else { return }
        drain(after: first, reader: reader)
        if !ended.withLock({ $0 }) { session.exit() }
    }

    private func drain(after signal: Int32, reader: Int32) {
        let name = Self.name(signal)
        var status = engine.status()
        if status.paused != nil {
            let queued = Self.changes(status.pendingEntries, "queued change")
            logger.notice(
                "stopping on \(name): the mount is paused, nothing is uploaded (\(queued) kept; the next mount stays paused until `syncfs-mount resume`)"
            )
            return
        }
        engine.expedite()
        guard status.pendingEntries > 0 else {
            logger.info("stopping on \(name): nothing is queued")
            return
        }
        let queued = Self.changes(status.pendingEntries, "queued change")
        let limit = Int(Self.drainDeadline)
        logger.notice(
            "stopping on \(name): uploading \(queued) first (at most \(limit) s; Ctrl-C or SIGTERM again stops at once)"
        )
        var progress = StopProgress()
        while status.pendingEntries > 0 {
            if let held = status.massDeleteGuard, held.held {
                logger.notice(
                    "stopping: the mass-delete guard holds the uploads; \(Self.staying(status.pendingEntries))")
                return
            }
            if status.paused != nil {
                logger.notice("stopping: the mount was paused; \(Self.staying(status.pendingEntries))")
                return
            }
            if let line = progress.line(status) { logger.notice("\(line)") }
            if progress.elapsed >= Self.drainDeadline {
                logger.notice("stopping: \(limit) s passed; \(Self.staying(status.pendingEntries))")
                return
            }
            if let again = SignalPipe.wait(reader, seconds: 0.25) {
                let left = engine.status().pendingEntries
                logger.notice("stopping at once on a second \(Self.name(again)): \(Self.staying(left))")
                return
            }
            // Changes made meanwhile go at once too.
            engine.expedite()
            status = engine.status()
        }
        logger.notice("stopping: every queued change is uploaded")
    }

    /// `1 change`, `3 changes` (with `noun` in the singular).
    static func changes(_ count: Int, _ noun: String = "change") -> String {
        "\(count) \(noun)" + (count == 1 ? "" : "s")
    }

    /// `3 changes stay queued; they are uploaded at the next mount`.
    static func staying(_ count: Int) -> String {
        count == 1
            ? "1 change stays queued; it is uploaded at the next mount"
            : "\(changes(count)) stay queued; they are uploaded at the next mount"
    }

    static func name(_ signal: Int32) -> String {
        switch signal {
        case SIGINT: return "SIGINT"
        case SIGTERM: return "SIGTERM"
        case SIGHUP: return "SIGHUP"
        default: return "signal \(signal)"
        }
    }
}

/// The pipe the stop signals' handler writes to: one byte, the signal's number.
private enum SignalPipe {
    /// The write end, set once before any handler is installed (the handler only reads it).
    nonisolated(unsafe) static var writer: Int32 = -1

    /// Makes the pipe (both ends close-on-exec, the write end non-blocking: a handler never
    /// waits) and returns its read end; nil if it cannot.
    static func open() -> Int32? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        writer = ends[1]
        return ends[0]
    }

    /// In the signal handler: async-signal-safe calls only.
    static func note(_ signal: Int32) {
        let saved = errno
        var byte = UInt8(truncatingIfNeeded: signal)
        _ = write(writer, &byte, 1)
        errno = saved
    }

    /// The next signal's number, waiting at most `seconds` (nil: without end); nil if none came.
    static func wait(_ reader: Int32, seconds: Double?) -> Int32? {
        var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        let timeout = seconds.map { Int32($0 * 1000) } ?? -1
        while true {
            let ready = poll(&descriptor, 1, timeout)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var byte: UInt8 = 0
            let count = read(reader, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            return count == 1 ? Int32(byte) : nil
        }
    }
}

/// The progress of a stop's upload, as log lines: at most one every `interval` seconds, and only
/// when something moved — `stopping: 3 changes left to upload (40 % of 12582912 bytes done)`.
struct StopProgress {
    static let interval: Double = 2
    private let started = DispatchTime.now().uptimeNanoseconds
    private var lastLine: Double = 0
    private var lastShown: (entries: Int, left: Int64)?
    /// The most bytes seen waiting: what "done" is measured against.
    private var total: Int64 = 0

    /// Seconds since the stop began.
    var elapsed: Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }

    /// The line to log for `status` now, if one is due.
    mutating func line(_ status: SyncStatus) -> String? {
        let left = max(status.uploadBytesLeft ?? status.pendingBytes, 0)
        total = max(total, left)
        let now = elapsed
        guard now - lastLine >= Self.interval else { return nil }
        if let lastShown, lastShown.entries == status.pendingEntries, lastShown.left == left { return nil }
        let first = lastShown == nil
        lastShown = (status.pendingEntries, left)
        lastLine = now
        // The first look shows nothing new: the stop's first line said what waits.
        if first { return nil }
        var line = "stopping: \(StopOnSignal.changes(status.pendingEntries)) left to upload"
        if total > 0 { line += " (\((total - left) * 100 / total) % of \(total) bytes done)" }
        if !status.online { line += ", offline, waiting" }
        return line
    }
}
