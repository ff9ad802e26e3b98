import Foundation
import Glibc
import TestSupport

/// A `python3` child that takes advisory locks on one file when told, one command a line on its
/// standard input, one answer a line on its output:
///
///     open PATH                 → ok | error ERRNO
///     flock ex|sh|un [nb]       → ok | busy (EAGAIN = EWOULDBLOCK) | interrupted | error ERRNO
///     fcntl wr|rd|un START LEN [nb]  (F_SETLK with nb, else F_SETLKW)
///     getlk wr|rd START LEN     → unlocked | locked wr|rd START LEN
///     close                     → ok
///
/// A SIGUSR1 handler raises, so a blocking lock that the signal interrupts answers `interrupted`
/// (Python retries a call that EINTR ended only when the handler returns).
final class LockingProcess {
    let pid: pid_t
    private let input: Int32
    private let output: Int32
    private var ended = false

    private init(pid: pid_t, input: Int32, output: Int32) {
        self.pid = pid
        self.input = input
        self.output = output
    }

    static let script = """
        import fcntl, os, signal, struct, sys
        class Interrupted(Exception):
            pass
        def interrupted(number, frame):
            raise Interrupted()
        signal.signal(signal.SIGUSR1, interrupted)
        fd = None
        def answer(text):
            print(text, flush=True)
        for line in sys.stdin:
            words = line.split()
            try:
                if words[0] == "open":
                    fd = os.open(words[1], os.O_RDWR)
                    answer("ok")
                elif words[0] == "close":
                    os.close(fd)
                    fd = None
                    answer("ok")
                elif words[0] == "flock":
                    op = {"ex": fcntl.LOCK_EX, "sh": fcntl.LOCK_SH, "un": fcntl.LOCK_UN}[words[1]]
                    if "nb" in words[2:]:
                        op |= fcntl.LOCK_NB
                    fcntl.flock(fd, op)
                    answer("ok")
                elif words[0] == "fcntl":
                    op = {"wr": fcntl.LOCK_EX, "rd": fcntl.LOCK_SH, "un": fcntl.LOCK_UN}[words[1]]
                    if "nb" in words[4:]:
                        op |= fcntl.LOCK_NB
                    fcntl.lockf(fd, op, int(words[3]), int(words[2]), os.SEEK_SET)
                    answer("ok")
                elif words[0] == "getlk":
                    kind = {"wr": fcntl.F_WRLCK, "rd": fcntl.F_RDLCK}[words[1]]
                    asked = struct.pack("hhqqixxxx", kind, os.SEEK_SET, int(words[2]), int(words[3]), 0)
                    got = struct.unpack("hhqqixxxx", fcntl.fcntl(fd, fcntl.F_GETLK, asked))
                    if got[0] == fcntl.F_UNLCK:
                        answer("unlocked")
                    else:
                        answer("locked %s %d %d" % ("wr" if got[0] == fcntl.F_WRLCK else "rd", got[2], got[3]))
            except Interrupted:
                answer("interrupted")
            except OSError as error:
                import errno
                answer("busy" if error.errno == errno.EAGAIN else "error %d" % error.errno)
        """

    static func start() throws -> LockingProcess {
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        try posix("pipe") { pipe(&toChild) }
        try posix("pipe") { pipe(&fromChild) }
        for end in toChild + fromChild { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer {
            close(toChild[0])
            close(fromChild[1])
        }
        let pid = try ChildProcess.spawn(
            [try HostileServerProcess.python(), "-c", script], stdin: toChild[0], stdout: fromChild[1],
            stderr: fromChild[1])
        return LockingProcess(pid: pid, input: toChild[1], output: fromChild[0])
    }

    /// Runs `body` with a started process and always ends it.
    static func with<R>(_ body: (LockingProcess) throws -> R) throws -> R {
        let process = try start()
        defer { process.end() }
        return try body(process)
    }

    /// Sends one command without waiting for its answer.
    func send(_ command: String) {
        let bytes = Array((command + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
    }

    /// The next answer, or nil after `timeout` seconds.
    func answer(timeout: Double = 30) -> String? { ChildProcess.readLine(output, timeout: timeout) }

    /// Sends `command` and returns its answer ("no answer" after `timeout`).
    @discardableResult
    func run(_ command: String, timeout: Double = 30) -> String {
        send(command)
        return answer(timeout: timeout) ?? "no answer within \(Int(timeout)) s"
    }

    func signal(_ number: Int32) { kill(pid, number) }

    /// Kills the process (its descriptors close) and reaps it.
    func end() {
        guard !ended else { return }
        ended = true
        kill(pid, SIGKILL)
        _ = ChildProcess.waitForExit(pid, timeout: 10)
        close(input)
        close(output)
    }
}
