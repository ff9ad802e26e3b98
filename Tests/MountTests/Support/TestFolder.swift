import Foundation
import Glibc
import TestSupport
import Testing

/// Why the harness could not set up or stop a folder (daemon failures carry the daemon's stderr).
struct TestFolderError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Where a suite runs: a plain temporary directory or a live SyncFS mount of the built binary.
///
/// Write each test once and run it on both kinds:
///
///     @Test(arguments: TestFolder.Kind.allCases)
///     func something(kind: TestFolder.Kind) throws {
///         let folder = try TestFolder.make(kind)
///         defer { folder.tearDown() }
///         try writeFile(folder.path("a"), "x")
///     }
///
/// The mount is `<binary> mount <container> <mountpoint> --state-dir <stateDir> --foreground
/// --lifeline` plus the folder's `mountArguments`; its standard input is a pipe this process holds
/// (if the test process dies, the daemon sees end-of-file and unmounts itself). The binary is
/// `$SYNCFS_MOUNT_BINARY`, else `<package>/.build/debug/syncfs-mount`; a missing binary fails the
/// test (never a skip).
///
/// On `plain`, `unmount()`, `remount()` and `kill9()` do nothing, so a persistence test written
/// once simply re-reads the directory there.
final class TestFolder: @unchecked Sendable {
    enum Kind: String, CaseIterable, Sendable { case plain, mount }

    let kind: Kind
    /// Absolute path of the folder the assertions use (the mount point for `mount`).
    let root: String
    /// The container directory (plain: unused but created). Several folders may share one (see
    /// `SyncedMounts`); a shared container is neither created nor removed by this folder.
    let containerPath: String
    /// Extra arguments for every `mount` of this folder (e.g. `--upload-delay 20`).
    let mountArguments: [String]
    /// Variables added to the daemon's environment at every start (`OutageSwitch`).
    let mountEnvironment: [String: String]
    /// The daemon's --state-dir (plain: unused but created).
    let stateDir: String
    /// The temporary directory holding everything (/tmp/syncfs-tests-XXXXXX).
    let baseDir: String
    /// The daemon's standard error (every start appends to it).
    let logPath: String

    /// Seconds to wait for `ready`, and for the daemon to exit on a graceful stop.
    static let readyTimeout: Double = 30
    static let exitTimeout: Double = 30

    private struct Daemon {
        let pid: pid_t
        /// Write end of the daemon's standard input; closing it asks the daemon to unmount.
        let lifeline: Int32
    }

    private let lock = NSLock()
    private var daemon: Daemon?
    private var tornDown = false

    private init(
        kind: Kind, baseDir: String, sharedContainer: String?, mountArguments: [String],
        mountEnvironment: [String: String]
    ) {
        self.kind = kind
        self.baseDir = baseDir
        self.containerPath = sharedContainer ?? baseDir + "/container"
        self.mountArguments = mountArguments
        self.mountEnvironment = mountEnvironment
        self.stateDir = baseDir + "/state"
        self.logPath = baseDir + "/daemon.stderr.log"
        self.root = baseDir + (kind == .mount ? "/mnt" : "/plain")
    }

    /// Makes a fresh folder of the given kind under a new temp dir (/tmp/syncfs-tests-XXXX).
    /// `sharedContainer`: mount this existing container directory instead of a fresh one (it stays
    /// when the folder is torn down). `mountArguments` are appended to every `mount` command, and
    /// `mountEnvironment` added to its environment. `beforeFirstMount` runs once the directories
    /// exist, before the daemon starts (e.g. to mount a small tmpfs on `stateDir`).
    static func make(
        _ kind: Kind, sharedContainer: String? = nil, mountArguments: [String] = [],
        mountEnvironment: [String: String] = [:], beforeFirstMount: (TestFolder) throws -> Void = { _ in }
    ) throws -> TestFolder {
        // Modes in the suites assume the usual umask.
        umask(0o022)
        let base = try makeTemporaryDirectory("syncfs-tests")
        let folder = TestFolder(
            kind: kind, baseDir: base, sharedContainer: sharedContainer, mountArguments: mountArguments,
            mountEnvironment: mountEnvironment)
        do {
            let ownContainer = sharedContainer == nil ? [folder.containerPath] : []
            for directory in ownContainer + [folder.stateDir, folder.root] {
                try makeDirectory(directory, mode: 0o755)
            }
            try beforeFirstMount(folder)
            if kind == .mount { try folder.start() }
        } catch {
            folder.tearDown()
            throw error
        }
        return folder
    }

    /// Runs `body` on a fresh folder of `kind` and always tears it down.
    static func with<R>(_ kind: Kind, _ body: (TestFolder) throws -> R) throws -> R {
        let folder = try make(kind)
        defer { folder.tearDown() }
        return try body(folder)
    }

    /// `root + "/" + relative`.
    func path(_ relative: String) -> String { root + "/" + relative }

    /// Daemon pid (mount only).
    var daemonPID: pid_t? { lock.withLock { daemon?.pid } }

    /// The daemon's standard error so far (its last `limit` bytes).
    func daemonLog(limit: Int = 4000) -> String { Self.tail(of: logPath, limit: limit) }

    /// Graceful stop: closes the lifeline (daemon's stdin), waits for the process to exit (timeout 30 s,
    /// then SIGKILL + `fusermount3 -u -z`), asserts the mount is gone from /proc/mounts.
    /// A non-zero exit status is an error too. Plain: does nothing.
    func unmount() throws {
        guard kind == .mount else { return }
        try lock.withLock {
            guard let running = daemon else {
                throw TestFolderError(message: "unmount: \(root) has no running daemon")
            }
            daemon = nil
            close(running.lifeline)
            guard let status = Self.waitForExit(running.pid, timeout: Self.exitTimeout) else {
                kill(running.pid, SIGKILL)
                _ = Self.waitForExit(running.pid, timeout: 10)
                Self.lazyUnmount(root)
                throw TestFolderError(
                    message: "unmount: the daemon (pid \(running.pid)) did not exit within \(Int(Self.exitTimeout)) s "
                        + "after its lifeline closed; killed it and lazily unmounted \(root)\n" + stderrTail())
            }
            if Self.isMounted(root) {
                Self.lazyUnmount(root)
                throw TestFolderError(
                    message:
                        "unmount: the daemon exited (\(Self.describe(status))) but \(root) is still in /proc/mounts\n"
                        + stderrTail())
            }
            if status != 0 {
                throw TestFolderError(
                    message: "unmount: the daemon exited with \(Self.describe(status)) on a graceful stop\n"
                        + stderrTail())
            }
        }
    }

    /// SIGKILL the daemon (a crash); the kernel mount stays behind as a dead mount. Plain: does nothing.
    func kill9() throws {
        guard kind == .mount else { return }
        try lock.withLock {
            guard let running = daemon else {
                throw TestFolderError(message: "kill9: \(root) has no running daemon")
            }
            daemon = nil
            kill(running.pid, SIGKILL)
            let status = Self.waitForExit(running.pid, timeout: 10)
            close(running.lifeline)
            if status == nil {
                throw TestFolderError(message: "kill9: pid \(running.pid) did not die within 10 s of SIGKILL")
            }
        }
    }

    /// Mount again on the same container, state dir and mount point (after unmount or kill9).
    /// After kill9 the new daemon itself must clear the stale mount (that is the product's job).
    /// Plain: does nothing.
    func remount() throws {
        guard kind == .mount else { return }
        if daemonPID != nil {
            throw TestFolderError(message: "remount: \(root) is still mounted; unmount or kill9 first")
        }
        try start()
    }

    /// Always safe to call; unmounts if mounted (never leaves a mount behind), removes temp dirs.
    func tearDown() {
        let running: Daemon? = lock.withLock {
            if tornDown { return nil }
            tornDown = true
            defer { daemon = nil }
            return daemon
        }
        if let running {
            close(running.lifeline)
            if Self.waitForExit(running.pid, timeout: Self.exitTimeout) == nil {
                kill(running.pid, SIGKILL)
                _ = Self.waitForExit(running.pid, timeout: 10)
            }
        }
        if Self.isMounted(root) { Self.lazyUnmount(root) }
        if Self.isMounted(root) {
            Issue.record("tearDown: \(root) is still mounted; leaving \(baseDir) in place")
            return
        }
        try? FileManager.default.removeItem(atPath: baseDir)
    }

    // MARK: - Starting the daemon

    /// The daemon binary: `$SYNCFS_MOUNT_BINARY`, else `<package root>/.build/debug/syncfs-mount`.
    static func binaryPath() throws -> String {
        do throws(TestSupportError) {
            return try SyncfsBinary.path()
        } catch {
            throw TestFolderError(message: error.message + "; mount tests cannot run without it")
        }
    }

    /// The benchmarks' command (`seed-container`), built beside the daemon binary.
    static func benchBinaryPath() throws -> String {
        do throws(TestSupportError) {
            return try SyncfsBinary.benchPath()
        } catch {
            throw TestFolderError(message: error.message)
        }
    }

    private func start() throws {
        let binary = try Self.binaryPath()
        var arguments = [binary, "mount", containerPath, root, "--state-dir", stateDir, "--foreground", "--lifeline"]
        // A fresh local container is made by its first mount only on request (`--create`);
        // harmless on later mounts, which never create one.
        if !containerPath.contains("://") { arguments.append("--create") }
        arguments += mountArguments
        var stdinPipe: [Int32] = [-1, -1]
        var stdoutPipe: [Int32] = [-1, -1]
        try posix("pipe2") { Linux.pipe2(&stdinPipe, O_CLOEXEC) }
        do {
            try posix("pipe2") { Linux.pipe2(&stdoutPipe, O_CLOEXEC) }
        } catch {
            close(stdinPipe[0])
            close(stdinPipe[1])
            throw error
        }
        let logFD = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        /// The child's ends must be closed here right after the spawn, or the daemon's exit would
        /// never show as end-of-file on its standard output.
        func closeChildEnds() {
            close(stdinPipe[0])
            close(stdoutPipe[1])
            if logFD >= 0 { close(logFD) }
        }
        guard logFD >= 0 else {
            let code = errno
            closeChildEnds()
            close(stdinPipe[1])
            close(stdoutPipe[0])
            throw TestFolderError(message: "cannot open \(logPath): \(errnoName(code))")
        }
        let variables = mountEnvironment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value) " }.joined()
        let header = "---- \(Date()) \(variables)\(arguments.joined(separator: " "))\n"
        _ = header.withCString { write(logFD, $0, strlen($0)) }

        let pid: pid_t
        do {
            pid = try Self.spawn(
                arguments, stdin: stdinPipe[0], stdout: stdoutPipe[1], stderr: logFD, environment: mountEnvironment)
            closeChildEnds()
        } catch {
            closeChildEnds()
            close(stdinPipe[1])
            close(stdoutPipe[0])
            throw error
        }
        let outcome = Self.waitForReady(stdoutPipe[0], pid: pid, timeout: Self.readyTimeout)
        switch outcome {
        case .ready:
            // Keep reading standard output so the daemon never blocks on (or dies of) a full pipe.
            let output = stdoutPipe[0]
            Thread.detachNewThread {
                var sink = [UInt8](repeating: 0, count: 4096)
                while read(output, &sink, sink.count) > 0 {}
                close(output)
            }
            lock.withLock { daemon = Daemon(pid: pid, lifeline: stdinPipe[1]) }
            if !Self.isMounted(root) {
                try? unmount()
                throw TestFolderError(
                    message: "the daemon printed `ready` but \(root) is not in /proc/mounts\n" + stderrTail())
            }
        case .exited(let status, let output):
            close(stdinPipe[1])
            close(stdoutPipe[0])
            if Self.isMounted(root) { Self.lazyUnmount(root) }
            throw TestFolderError(
                message: "the daemon exited (\(Self.describe(status))) before printing `ready`; "
                    + "stdout: \(output.debugDescription)\n" + stderrTail(limit: 12_000))
        case .timedOut(let output):
            close(stdinPipe[1])
            close(stdoutPipe[0])
            kill(pid, SIGKILL)
            _ = Self.waitForExit(pid, timeout: 10)
            if Self.isMounted(root) { Self.lazyUnmount(root) }
            throw TestFolderError(
                message: "the daemon did not print `ready` within \(Int(Self.readyTimeout)) s (killed it); "
                    + "stdout: \(output.debugDescription)\n" + stderrTail())
        }
    }

    private func stderrTail(limit: Int = 4000) -> String {
        "daemon stderr (\(logPath)), last lines:\n" + Self.tail(of: logPath, limit: limit)
    }

    /// posix_spawn with the three standard descriptors replaced, every signal unblocked and every
    /// handler at its default (`ChildProcess.spawn`), with `environment` added to this process's.
    static func spawn(
        _ arguments: [String], stdin: Int32, stdout: Int32, stderr: Int32, environment: [String: String] = [:]
    ) throws -> pid_t {
        do throws(TestSupportError) {
            return try ChildProcess.spawn(
                arguments, stdin: stdin, stdout: stdout, stderr: stderr, environment: environment)
        } catch {
            throw TestFolderError(message: error.message)
        }
    }

    private enum ReadyOutcome {
        case ready
        case exited(Int32, String)
        case timedOut(String)
    }

    /// Reads the daemon's standard output until a line `ready`, end-of-file or the timeout.
    private static func waitForReady(_ fd: Int32, pid: pid_t, timeout: Double) -> ReadyOutcome {
        let deadline = Date().addingTimeInterval(timeout)
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: output, as: UTF8.self)
            if text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().contains(where: {
                $0.trimmingCharacters(in: .whitespaces) == "ready"
            }) {
                return .ready
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return .timedOut(text) }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&descriptor, 1, Int32(min(remaining, 1) * 1000) + 1)
            if polled < 0 && errno != EINTR { return .timedOut(text) }
            if polled <= 0 { continue }
            let count = read(fd, &chunk, chunk.count)
            if count > 0 {
                output.append(contentsOf: chunk[0..<count])
            } else if count == 0 || (count < 0 && errno != EINTR && errno != EAGAIN) {
                let status = waitForExit(pid, timeout: 10)
                if let status { return .exited(status, text) }
                // Closed its standard output yet still running: wait out the timeout, then kill.
                kill(pid, SIGKILL)
                _ = waitForExit(pid, timeout: 10)
                return .exited(-1, text + " [closed stdout without exiting; killed]")
            }
        }
    }
}
