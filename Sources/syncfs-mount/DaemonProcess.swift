import Glibc

/// A background daemon started from this executable: own session, signals reset, standard
/// input from /dev/null, standard output a pipe for the readiness line, standard error the log.
struct DaemonProcess {
    let pid: pid_t
    let readiness: Int32

    struct SpawnError: Error, CustomStringConvertible {
        let description: String
    }

    static func spawn(arguments: [String], logPath: String) throws -> DaemonProcess {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw SpawnError(description: String(cString: strerror(errno))) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], STDOUT_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
        posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | posixSpawnSetsid))
        let executable = "/proc/self/exe"
        let argv = (["syncfs-mount"] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        close(pipeEnds[1])
        guard rc == 0 else {
            close(pipeEnds[0])
            throw SpawnError(description: String(cString: strerror(rc)))
        }
        return DaemonProcess(pid: pid, readiness: pipeEnds[0])
    }

    /// True once the daemon printed `ready`; false if it closed its output first (it failed).
    /// The `attaching N` lines of a first mount before it (`FirstAttach`) go to `attaching`.
    func waitUntilReady(attaching: (Int) -> Void = { _ in }) -> Bool {
        defer { close(readiness) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let count = read(readiness, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            received += buffer[0..<count]
            while let end = received.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: received[..<end], as: UTF8.self)
                received.removeSubrange(...end)
                if line == "ready" { return true }
                if let entries = AttachProgressDisplay.entries(inLine: line) { attaching(entries) }
            }
            // A daemon never writes long lines: a runaway one is dropped, not kept growing.
            if received.count > 4096 { received.removeAll() }
        }
    }

    /// The daemon's exit code (128 + signal if it was killed).
    func waitForExit() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// glibc's POSIX_SPAWN_SETSID (a macro Swift does not import): run the child in a new session.
private let posixSpawnSetsid: Int32 = 0x80
