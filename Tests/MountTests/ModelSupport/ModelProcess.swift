import Foundation
import Glibc
import TestSupport

struct ModelProcessResult: Sendable, CustomStringConvertible {
    var argv: [String]
    var status: Int32  // exit code, or 128+signal
    var stdout: String
    var stderr: String
    var timedOut: Bool
    var ok: Bool { status == 0 && !timedOut }
    var description: String {
        "`\(argv.joined(separator: " "))` -> status \(status)\(timedOut ? " (TIMED OUT)" : "")"
            + (stdout.isEmpty ? "" : "\nstdout: \(stdout.suffix(3000))")
            + (stderr.isEmpty ? "" : "\nstderr: \(stderr.suffix(3000))")
    }
}

/// Runs external programs with posix_spawnp; output goes through temporary files (no pipe deadlocks).
final class ModelProcess: @unchecked Sendable {
    let argv: [String]
    let pid: pid_t
    private let outPath: String
    private let errPath: String
    let spawnError: Int32

    /// `defaultSignals`: the child starts with no signal blocked and the usual terminating signals
    /// at their default action, as from a login shell (the test runner's own mask would
    /// otherwise be inherited, and a script's `kill PID` would not end what it started).
    init(
        _ argv: [String], cwd: String? = nil, env: [String: String] = [:], stdinPath: String? = nil,
        defaultSignals: Bool = false
    ) {
        self.argv = argv
        let tag = "\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        outPath = "/tmp/syncfs-model-proc-\(tag).out"
        errPath = "/tmp/syncfs-model-proc-\(tag).err"
        var fa = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fa)
        defer { posix_spawn_file_actions_destroy(&fa) }
        posix_spawn_file_actions_addopen(&fa, 0, stdinPath ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fa, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&fa, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let cwd { _ = ModelConst.addchdir(&fa, cwd) }
        var environment = ProcessInfo.processInfo.environment
        for (k, v) in env { environment[k] = v }
        var cenv: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer {
            for p in cenv { free(p) }
            for p in cargs { free(p) }
        }
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        // A fresh process group, so a timeout can kill the whole tree.
        var flags = Int32(POSIX_SPAWN_SETPGROUP)
        if defaultSignals {
            var none = sigset_t()
            sigemptyset(&none)
            posix_spawnattr_setsigmask(&attr, &none)
            var terminating = sigset_t()
            sigemptyset(&terminating)
            for signal in [SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM] { sigaddset(&terminating, signal) }
            posix_spawnattr_setsigdefault(&attr, &terminating)
            flags |= Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
        }
        posix_spawnattr_setflags(&attr, Int16(flags))
        posix_spawnattr_setpgroup(&attr, 0)
        var child: pid_t = 0
        spawnError = posix_spawnp(&child, argv[0], &fa, &attr, &cargs, &cenv)
        pid = spawnError == 0 ? child : -1
    }

    /// Waits for the process (killing its group after timeout seconds).
    func wait(timeout: Double = 120) -> ModelProcessResult {
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        guard spawnError == 0 else {
            return ModelProcessResult(
                argv: argv, status: 127, stdout: "",
                stderr: "posix_spawnp failed: \(ModelSys.errnoName(spawnError))", timedOut: false)
        }
        var status: Int32 = 0
        let ended = waitUntil(timeout: timeout) {
            let r = waitpid(pid, &status, WNOHANG)
            return r == pid || (r < 0 && errno != EINTR)
        }
        let timedOut = !ended
        if timedOut {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
        }
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        return ModelProcessResult(argv: argv, status: code, stdout: out, stderr: err, timedOut: timedOut)
    }

    static func run(
        _ argv: [String], cwd: String? = nil, env: [String: String] = [:],
        stdinPath: String? = nil, timeout: Double = 120
    ) -> ModelProcessResult {
        ModelProcess(argv, cwd: cwd, env: env, stdinPath: stdinPath).wait(timeout: timeout)
    }
}
