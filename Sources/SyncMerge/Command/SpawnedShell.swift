import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `/bin/sh -c COMMAND` started with posix_spawn in a new process group, its standard output and
/// error read through pipes (up to `MergeCommand.outputLimit` bytes each kept).
struct SpawnedShell {
    struct SpawnError: Error {
        var message: String
    }

    let pid: pid_t
    private var pipes: [Int32]  // read ends: [stdout, stderr]; -1 once closed
    private(set) var output: [UInt8] = []
    private(set) var errorOutput: [UInt8] = []
    private var reaped = false
    private var status: Int32 = 0

    init(_ commandLine: String, workingDirectory: String) throws(SpawnError) {
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0 else { throw SpawnError(message: Self.errnoText()) }
        guard pipe(&errPipe) == 0 else {
            let message = Self.errnoText()
            close(outPipe[0])
            close(outPipe[1])
            throw SpawnError(message: message)
        }
        // Not inherited by other children; the command gets its own copies on 1 and 2.
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer {
            close(outPipe[1])
            close(errPipe[1])
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], STDERR_FILENO)
        var command = commandLine
        if let addChdir = Self.addChdir {
            _ = workingDirectory.withCString { addChdir(&actions, $0) }
        } else {
            command = "cd -- \(MergeCommand.shellQuoted(workingDirectory)) || exit 126\n" + commandLine
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let words: [String] = ["/bin/sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
        guard rc == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw SpawnError(message: String(cString: strerror(rc)))
        }
        self.pid = pid
        pipes = [outPipe[0], errPipe[0]]
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }

    /// glibc's posix_spawn_file_actions_addchdir_np (2.29+), which the Glibc module does not import.
    private static let addChdir: AddChdir? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")
        else { return nil }
        return unsafeBitCast(symbol, to: AddChdir.self)
    }()

    private typealias AddChdir =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    /// Whether the shell exited (it stays a zombie until `reap`, keeping its process group ID).
    var hasExited: Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0
            && info._sifields._sigchld.si_pid == pid
    }

    /// Reads what the pipes have, waiting at most `timeout` seconds for something to arrive.
    mutating func pump(timeout: Double) {
        var polls = pipes.filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        guard !polls.isEmpty else {
            usleep(UInt32(timeout * 1e6))
            return
        }
        guard poll(&polls, nfds_t(polls.count), Int32(timeout * 1000)) > 0 else { return }
        for entry in polls where entry.revents != 0 { read(entry.fd) }
    }

    /// Reads whatever the pipes hold now, without waiting, then closes them.
    mutating func drain() {
        for index in pipes.indices where pipes[index] >= 0 {
            while pipes[index] >= 0 {
                var entry = pollfd(fd: pipes[index], events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 0) > 0 else { break }
                read(pipes[index])
            }
            if pipes[index] >= 0 {
                close(pipes[index])
                pipes[index] = -1
            }
        }
    }

    private mutating func read(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        let count = Glibc.read(fd, &buffer, buffer.count)
        if count < 0 && (errno == EINTR || errno == EAGAIN) { return }
        guard count > 0 else {
            close(fd)
            if let index = pipes.firstIndex(of: fd) { pipes[index] = -1 }
            return
        }
        let data = buffer[..<count]
        if fd == pipes[0] {
            output += data.prefix(MergeCommand.outputLimit - output.count)
        } else {
            errorOutput += data.prefix(MergeCommand.outputLimit - errorOutput.count)
        }
    }

    /// SIGTERM to the process group; SIGKILL to it one second later if the shell is still there
    /// (and in any case, for what it left behind). Output keeps being read meanwhile.
    mutating func terminateGroup() {
        kill(-pid, SIGTERM)
        let deadline = Monotonic.now + 1
        while !hasExited && Monotonic.now < deadline { pump(timeout: 0.05) }
        kill(-pid, SIGKILL)
    }

    /// Waits for the shell and returns its wait status.
    mutating func reap() -> Int32 {
        if !reaped {
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            reaped = true
        }
        return status
    }
}
