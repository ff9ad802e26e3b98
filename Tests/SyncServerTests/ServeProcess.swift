import Foundation
import Glibc
import TestSupport
import Testing

/// The built `syncfs-mount` binary (`$SYNCFS_MOUNT_BINARY`, else `<package>/.build/debug/syncfs-mount`)
/// run as a child process.
enum Binary {
    static func path() throws -> String { try SyncfsBinary.path() }

    /// `process` set up to run `syncfs-mount ARGUMENTS`; with `umask`, started with that umask
    /// (through `/bin/sh`, which `exec`s the binary: the process ID stays the binary's).
    static func configure(_ process: Process, _ arguments: [String], umask: String?) throws {
        if let umask {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "umask \(umask) && exec \"$0\" \"$@\"", try path()] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: try path())
            process.arguments = arguments
        }
    }

    /// Runs `syncfs-mount ARGUMENTS` to its end (with `umask`, if given, as an octal string; in
    /// `directory`, if given, else in the test's current directory).
    static func run(_ arguments: [String], umask: String? = nil, in directory: String? = nil) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let process = Process()
        try configure(process, arguments, umask: umask)
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)
        )
    }
}

/// `syncfs-mount serve` as a child process (`ServeLauncher`, standard input /dev/null); `stop()`
/// (SIGTERM) in every test's teardown.
final class ServeProcess: @unchecked Sendable {
    let pid: pid_t
    /// The line the server printed once bound.
    let listeningLine: String
    let port: Int
    let logPath: String
    /// The exit code once it has exited and been reaped (see `isRunning`).
    private var exitCode: Int32?

    private init(_ launched: ServeLauncher.Launched, logPath: String) {
        pid = launched.pid
        listeningLine = launched.listeningLine
        port = launched.port
        self.logPath = logPath
    }

    /// Starts `serve --root ROOT --listen 127.0.0.1:0 EXTRA` (with `umask`, if given) and waits
    /// for its `listening on` line.
    static func start(root: String, extra: [String] = [], umask: String? = nil) throws -> ServeProcess {
        let logPath = root + "/.serve-\(UUID().uuidString).log"  // hidden: never a container name
        let launched = try ServeLauncher.launch(
            root: root, extra: extra, lifeline: false, shellPrelude: umask.map { "umask \($0)" }, logPath: logPath)
        return ServeProcess(launched, logPath: logPath)
    }

    /// Whether the server has not exited yet.
    var isRunning: Bool {
        guard exitCode == nil else { return false }
        guard let status = ChildProcess.waitForExit(pid, timeout: 0) else { return true }
        exitCode = ChildProcess.exitCode(status)
        return false
    }

    /// The resident memory of the server, from /proc/PID/status.
    func residentKiB() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// The peak resident memory of the server so far (`VmHWM` of /proc/PID/status).
    func peakResidentKiB() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// CPU seconds the server used so far (user and system), from /proc/PID/stat.
    func cpuSeconds() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// SIGTERM, then waits up to `timeout` seconds; kills it if it is still running. Returns the
    /// exit status, nil if it had to be killed.
    @discardableResult
    func stop(timeout: Double = 10) -> Int32? {
        guard isRunning else { return exitCode }
        guard let status = ServeLauncher.stop(pid, timeout: timeout) else { return nil }
        exitCode = ChildProcess.exitCode(status)
        return exitCode
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}
