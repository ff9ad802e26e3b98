import Foundation
import Glibc
import Testing

/// The built `syncfs-mount` binary (`$SYNCFS_MOUNT_BINARY`, else `<package>/.build/debug/syncfs-mount`)
/// run as a child process.
enum Binary {
    static func path() throws -> String {
        let path: String
        if let configured = ProcessInfo.processInfo.environment["SYNCFS_MOUNT_BINARY"], !configured.isEmpty {
            path = configured
        } else {
            // #filePath is <package>/Tests/SyncServerTests/ServeProcess.swift.
            var root = URL(fileURLWithPath: #filePath)
            for _ in 0..<3 { root.deleteLastPathComponent() }
            path = root.path + "/.build/debug/syncfs-mount"
        }
        guard access(path, X_OK) == 0 else {
            throw TestFailure("no syncfs-mount binary at \(path): build it (swift build) or set SYNCFS_MOUNT_BINARY")
        }
        return path
    }

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

    /// Runs `syncfs-mount ARGUMENTS` to its end (with `umask`, if given, as an octal string).
    static func run(_ arguments: [String], umask: String? = nil) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let process = Process()
        try configure(process, arguments, umask: umask)
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

/// `syncfs-mount serve` as a child process; `stop()` (SIGTERM) in every test's teardown.
final class ServeProcess: @unchecked Sendable {
    let process: Process
    /// The line the server printed once bound.
    let listeningLine: String
    let port: Int
    let logPath: String

    private init(process: Process, listeningLine: String, port: Int, logPath: String) {
        self.process = process
        self.listeningLine = listeningLine
        self.port = port
        self.logPath = logPath
    }

    /// Starts `serve --root ROOT --listen 127.0.0.1:0 EXTRA` (with `umask`, if given) and waits
    /// for its `listening on` line.
    static func start(root: String, extra: [String] = [], umask: String? = nil) throws -> ServeProcess {
        let process = Process()
        try Binary.configure(process, ["serve", "--root", root, "--listen", "127.0.0.1:0"] + extra, umask: umask)
        let output = Pipe()
        let logPath = root + "/.serve-\(UUID().uuidString).log"  // hidden: never a container name
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let line = readLine(output.fileHandleForReading.fileDescriptor, timeout: 30)
        guard let line, let colon = line.lastIndex(of: ":"), let port = Int(line[line.index(after: colon)...]) else {
            process.terminate()
            process.waitUntilExit()
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw TestFailure("serve printed no `listening on` line (\(line ?? "nothing")); log:\n\(log)")
        }
        return ServeProcess(process: process, listeningLine: line, port: port, logPath: logPath)
    }

    var pid: pid_t { process.processIdentifier }

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
        guard process.isRunning else { return process.terminationStatus }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The first line on `fd`, or nil at end-of-file or after `timeout` seconds.
    private static func readLine(_ fd: Int32, timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while !output.contains(10) {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return nil }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(remaining * 1000)) > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return nil }
            output += buffer[0..<count]
        }
        return String(decoding: output.prefix { $0 != 10 }, as: UTF8.self)
    }
}
