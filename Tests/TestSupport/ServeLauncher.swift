import Foundation
import Glibc

/// The tests' one way to start `syncfs-mount serve` as a child process: the built binary on
/// 127.0.0.1, its standard error in a log file, and the port read from the `listening on` line it
/// prints once bound (so port 0, any free port, works).
///
/// The launched server is the caller's to stop (`stop`); with `lifeline`, it also stops when this
/// test process dies (its standard input reaches end-of-file).
public enum ServeLauncher {
    /// A server that printed its `listening on` line.
    public struct Launched: Sendable {
        public let pid: pid_t
        /// The port it bound.
        public let port: Int
        /// The line it printed once bound (`listening on http://127.0.0.1:PORT`).
        public let listeningLine: String
        /// The write end of its standard input with `lifeline` (close it to stop the server as a
        /// dying test runner would), else nil (standard input is /dev/null).
        public let lifeline: Int32?
    }

    /// Starts `serve --root ROOT --listen 127.0.0.1:PORT [--lifeline] EXTRA` and waits up to 30 s
    /// for its `listening on` line. `shellPrelude`: shell commands run first by `/bin/sh`, which
    /// then `exec`s the binary (the process ID stays the server's), e.g. `umask 022`.
    public static func launch(
        root: String, port: Int = 0, extra: [String] = [], lifeline: Bool, shellPrelude: String? = nil,
        logPath: String
    ) throws(TestSupportError) -> Launched {
        try launch(
            backend: ["--root", root], port: port, extra: extra, lifeline: lifeline, shellPrelude: shellPrelude,
            logPath: logPath)
    }

    /// The same with the containers from `backend` (`["--root", DIR]`, or `["--database", URL,
    /// "--chunk-store", LOCATION, "--tokens", DIR]`).
    public static func launch(
        backend: [String], port: Int = 0, extra: [String] = [], lifeline: Bool, shellPrelude: String? = nil,
        logPath: String
    ) throws(TestSupportError) -> Launched {
        let binary = try SyncfsBinary.path()
        var arguments = ["serve"] + backend + ["--listen", "127.0.0.1:\(port)"]
        if lifeline { arguments.append("--lifeline") }
        arguments += extra
        let argv =
            shellPrelude.map { ["/bin/sh", "-c", "\($0) && exec \"$0\" \"$@\"", binary] + arguments }
            ?? [binary] + arguments
        // Close-on-exec: no other child (a mount daemon) may inherit the write end and keep the
        // lifeline alive; the spawn's dup2 onto the server's descriptors clears the flag there.
        var stdoutPipe: [Int32] = [-1, -1]
        guard closeOnExecPipe(&stdoutPipe) else { throw TestSupportError("pipe failed: errno \(errno)") }
        var stdinPipe: [Int32] = [-1, -1]
        if lifeline {
            guard closeOnExecPipe(&stdinPipe) else {
                close(stdoutPipe[0])
                close(stdoutPipe[1])
                throw TestSupportError("pipe failed: errno \(errno)")
            }
        } else {
            stdinPipe[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)
        }
        let logFD = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        defer {
            if logFD >= 0 { close(logFD) }
            close(stdinPipe[0])
            close(stdoutPipe[0])
        }
        let pid: pid_t
        do throws(TestSupportError) {
            pid = try ChildProcess.spawn(argv, stdin: stdinPipe[0], stdout: stdoutPipe[1], stderr: logFD)
        } catch {
            close(stdoutPipe[1])
            if lifeline { close(stdinPipe[1]) }
            throw error
        }
        close(stdoutPipe[1])
        guard let line = ChildProcess.readLine(stdoutPipe[0], timeout: 30), let bound = boundPort(line) else {
            kill(pid, SIGKILL)
            if lifeline { close(stdinPipe[1]) }
            let status = ChildProcess.waitForExit(pid, timeout: 10)
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw TestSupportError(
                "the server did not print `listening on …` (\(status.map(ChildProcess.describe) ?? "still running")); "
                    + "log:\n" + String(log.suffix(3000)))
        }
        return Launched(pid: pid, port: bound, listeningLine: line, lifeline: lifeline ? stdinPipe[1] : nil)
    }

    /// SIGTERM (a graceful stop), then SIGKILL if it is still running after `timeout` seconds.
    /// Returns the wait status, nil if it had to be killed.
    public static func stop(_ pid: pid_t, timeout: Double = 10) -> Int32? {
        kill(pid, SIGTERM)
        if let status = ChildProcess.waitForExit(pid, timeout: timeout) { return status }
        kill(pid, SIGKILL)
        _ = ChildProcess.waitForExit(pid, timeout: 10)
        return nil
    }

    /// pipe(2) with both ends close-on-exec (Glibc's module has no pipe2).
    private static func closeOnExecPipe(_ ends: inout [Int32]) -> Bool {
        guard pipe(&ends) == 0 else { return false }
        return fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0 && fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0
    }

    /// The port in `listening on http(s)://HOST:PORT`.
    static func boundPort(_ line: String) -> Int? {
        guard line.hasPrefix("listening on "), let colon = line.lastIndex(of: ":") else { return nil }
        return Int(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
}
