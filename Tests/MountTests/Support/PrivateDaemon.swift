import Foundation
import Glibc
import TestSupport
import Testing

/// A mount for the privacy tests: the built binary in the foreground with `--lifeline`, started
/// through `sh -c 'umask U; exec env XDG_RUNTIME_DIR=R …'`, so a test chooses the umask and the
/// runtime directory of this daemon alone (setenv would change every test running in parallel).
///
/// Everything lives in `base`, a directory made 0755 on purpose: only SyncFS's own modes stand
/// between another user and the container, state and runtime directories.
final class PrivateDaemon {
    let base: String
    var container: String { base + "/container" }
    var state: String { base + "/state" }
    var mountpoint: String { base + "/mnt" }
    var runtime: String { base + "/run" }

    /// The registry directory the daemon's control socket lives in.
    var registry: String { runtime + "/syncfs/mounts" }

    /// The daemon's control socket, or nil (with an issue recorded) if there is none.
    func controlSocket(sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        if let socket = walkModes(registry).first(where: { $0.mode & S_IFMT == S_IFSOCK })?.path { return socket }
        Issue.record(
            "no socket in \(registry): \(walkModes(runtime).map(\.path))", sourceLocation: sourceLocation)
        return nil
    }
    var log: String { base + "/daemon.log" }
    private(set) var pid: pid_t?
    private var lifeline: Int32 = -1

    init() throws {
        base = try makeTemporaryDirectory("syncfs-private")
        try posix("chmod") { chmod(base, 0o755) }
        try makeDirectory(mountpoint, mode: 0o755)
    }

    /// The environment prefix of every command of this test: `env XDG_RUNTIME_DIR=<runtime>`.
    func environment(runtime: String? = nil) -> [String] {
        ["/usr/bin/env", "XDG_RUNTIME_DIR=\(runtime ?? self.runtime)"]
    }

    /// Starts the daemon; returns nil once it printed `ready`, or its exit status and log if it
    /// exited first.
    func start(umask mask: String = "022") throws -> (status: Int32, log: String)? {
        let binary = try TestFolder.binaryPath()
        let command =
            ["/bin/sh", "-c", "umask \(mask); exec \"$@\"", "sh"] + environment()
            + [binary, "mount", container, mountpoint, "--state-dir", state, "--foreground", "--lifeline", "--create"]
            + ["--upload-delay", "20"]
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        try posix("pipe2") { Linux.pipe2(&input, O_CLOEXEC) }
        try posix("pipe2") { Linux.pipe2(&output, O_CLOEXEC) }
        let logFD = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        let spawned = try TestFolder.spawn(command, stdin: input[0], stdout: output[1], stderr: logFD)
        close(input[0])
        close(output[1])
        close(logFD)
        defer { close(output[0]) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        let deadline = Date().addingTimeInterval(TestFolder.readyTimeout)
        while !String(decoding: received, as: UTF8.self).contains("ready\n") {
            var descriptor = pollfd(fd: output[0], events: Int16(POLLIN), revents: 0)
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 || (poll(&descriptor, 1, Int32(remaining * 1000)) <= 0 && errno != EINTR) {
                kill(spawned, SIGKILL)
                close(input[1])
                _ = TestFolder.waitForExit(spawned, timeout: 10)
                if TestFolder.isMounted(mountpoint) { TestFolder.lazyUnmount(mountpoint) }
                throw TestFolderError(message: "no `ready` within \(TestFolder.readyTimeout) s:\n\(logText)")
            }
            let count = read(output[0], &chunk, chunk.count)
            if count <= 0 {
                close(input[1])
                let status = TestFolder.waitForExit(spawned, timeout: 10) ?? -1
                if TestFolder.isMounted(mountpoint) { TestFolder.lazyUnmount(mountpoint) }
                return (status, logText)
            }
            received += chunk[..<count]
        }
        // Keep draining standard output so the daemon never blocks on it.
        let drain = dup(output[0])
        Thread.detachNewThread {
            var sink = [UInt8](repeating: 0, count: 256)
            while read(drain, &sink, sink.count) > 0 {}
            close(drain)
        }
        pid = spawned
        lifeline = input[1]
        return nil
    }

    var logText: String { TestFolder.tail(of: log, limit: 4000) }

    /// Runs `arguments` (a CLI command of this binary, or any program with `program: true`) with
    /// this test's environment, optionally as nobody; returns the exit status and the output.
    func run(
        _ arguments: [String], asNobody: Bool = false, runtime: String? = nil, program: Bool = false,
        timeout: Double = 60
    ) throws -> (status: Int32, output: String) {
        let command = program ? arguments : [try TestFolder.binaryPath()] + arguments
        let user = asNobody ? ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] : []
        return try runProcess(user + environment(runtime: runtime) + command, timeout: timeout)
    }

    /// Opens the way to the daemon's control socket `socket` (as a careless admin might) and
    /// plants it in a runtime directory of nobody's own; returns that directory, for `run(…,
    /// asNobody: true, runtime:)`. Only the daemon's peer check then stands between nobody and it;
    /// `closeRuntime` puts the modes back.
    func openSocketToNobody(_ socket: String) throws -> String {
        for directory in [runtime, runtime + "/syncfs", registry] {
            try posix("chmod") { chmod(directory, 0o711) }
        }
        try posix("chmod") { chmod(socket, 0o777) }
        let nobodyRuntime = base + "/nobody-run"
        for directory in [nobodyRuntime, nobodyRuntime + "/syncfs", nobodyRuntime + "/syncfs/mounts"] {
            try makeDirectory(directory, mode: 0o700)
            try posix("chown") { chown(directory, 65534, 65534) }
            try posix("chmod") { chmod(directory, 0o700) }
        }
        let planted = nobodyRuntime + "/syncfs/mounts/" + (socket as NSString).lastPathComponent
        try posix("symlink") { symlink(socket, planted) }
        try posix("lchown") { lchown(planted, 65534, 65534) }
        return nobodyRuntime
    }

    /// The runtime directories are the owner's alone again (after `openSocketToNobody`).
    func closeRuntime() throws {
        for directory in [runtime, runtime + "/syncfs", registry] {
            try posix("chmod") { chmod(directory, 0o700) }
        }
    }

    /// Closes the lifeline and waits for the daemon; always leaves nothing mounted.
    func stop() {
        if let pid {
            close(lifeline)
            if TestFolder.waitForExit(pid, timeout: TestFolder.exitTimeout) == nil {
                kill(pid, SIGKILL)
                _ = TestFolder.waitForExit(pid, timeout: 10)
            }
            self.pid = nil
        }
        if TestFolder.isMounted(mountpoint) { TestFolder.lazyUnmount(mountpoint) }
    }

    /// Stops the daemon and removes `base`.
    func tearDown() {
        stop()
        if !TestFolder.isMounted(mountpoint) { try? FileManager.default.removeItem(atPath: base) }
    }
}

/// Runs `command` with standard output and error in one pipe; kills it after `timeout` seconds.
func runProcess(_ command: [String], timeout: Double) throws -> (status: Int32, output: String) {
    var output: [Int32] = [-1, -1]
    try posix("pipe2") { Linux.pipe2(&output, O_CLOEXEC) }
    let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
    let pid = try TestFolder.spawn(command, stdin: devNull, stdout: output[1], stderr: output[1])
    close(devNull)
    close(output[1])
    defer { close(output[0]) }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        var descriptor = pollfd(fd: output[0], events: Int16(POLLIN), revents: 0)
        let remaining = deadline.timeIntervalSinceNow
        if remaining <= 0 {
            kill(pid, SIGKILL)
            _ = TestFolder.waitForExit(pid, timeout: 10)
            return (-1, String(decoding: received, as: UTF8.self) + " [killed after \(timeout) s]")
        }
        if poll(&descriptor, 1, Int32(remaining * 1000)) <= 0 { continue }
        let count = read(output[0], &chunk, chunk.count)
        if count <= 0 { break }
        received += chunk[..<count]
    }
    let status = TestFolder.waitForExit(pid, timeout: 10) ?? -1
    let signal = status & 0x7f
    return (signal == 0 ? (status >> 8) & 0xff : 128 + signal, String(decoding: received, as: UTF8.self))
}

/// Every path below `root` (not `root` itself) with its `lstat` mode, sorted.
func walkModes(_ root: String) -> [(path: String, mode: mode_t)] {
    var found: [(String, mode_t)] = []
    guard let directory = opendir(root) else { return [] }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        let name = entry.entryName
        if name == "." || name == ".." { continue }
        let path = root + "/" + name
        var info = stat()
        guard lstat(path, &info) == 0 else { continue }
        found.append((path, info.st_mode))
        if info.st_mode & S_IFMT == S_IFDIR { found += walkModes(path) }
    }
    return found.sorted { $0.0 < $1.0 }
}
