import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `/bin/sh -c COMMAND` started with fork and execve in a new process group, its standard output
/// and error read through pipes (up to `MergeCommand.outputLimit` bytes each kept).
///
/// fork/execve rather than posix_spawn: posix_spawn cannot change the user, and a daemon running as
/// root must drop to `identity` in the child before the command runs (a helper such as
/// util-linux's `setpriv` would add a program the machine may lack, and one more exec to trust).
/// Between fork and execve the child makes only async-signal-safe calls on memory prepared
/// before the fork: new process group, default signal dispositions and an empty mask, standard
/// input from /dev/null, the pipes on 1 and 2, every other descriptor closed (none of the
/// daemon's — the FUSE device, the database, sockets — reaches the command), the working
/// directory, then — when switching user — no supplementary groups, the group, the user, and a
/// check that root cannot be regained. Any failure there ends the child with status 126 and a
/// message on standard error; the command never runs with privileges it should not have.
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

    init(_ commandLine: String, workingDirectory: String, environment: [String], identity: MergeIdentity)
        throws(SpawnError)
    {
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
        let words: [String] = ["/bin/sh", "-c", commandLine]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        let directory = strdup(workingDirectory)!
        defer {
            for pointer in argv + envp { free(pointer) }
            free(directory)
        }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var limit = rlimit()
        let highestDescriptor =
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0
            ? Int32(clamping: limit.rlim_cur) : 65536
        let closeRange = Self.closeRange
        let switchTo = identity.switchTo
        let child = (out: outPipe[1], err: errPipe[1])
        let pid = argv.withUnsafeBufferPointer { argv in
            envp.withUnsafeBufferPointer { envp in
                let pid = fork()
                if pid == 0 {
                    Self.child(
                        argv: argv.baseAddress!, envp: envp.baseAddress!, directory: directory, output: child,
                        noSignals: &noSignals, highestDescriptor: highestDescriptor, closeRange: closeRange,
                        switchTo: switchTo)
                }
                return pid
            }
        }
        guard pid > 0 else {
            let message = Self.errnoText()
            close(outPipe[0])
            close(errPipe[0])
            throw SpawnError(message: message)
        }
        // The parent sets the group too, so a timeout can signal it even before the child ran.
        _ = setpgid(pid, pid)
        self.pid = pid
        pipes = [outPipe[0], errPipe[0]]
    }

    /// The child between fork and execve: async-signal-safe calls only, no allocation.
    private static func child(
        argv: UnsafePointer<UnsafeMutablePointer<CChar>?>, envp: UnsafePointer<UnsafeMutablePointer<CChar>?>,
        directory: UnsafeMutablePointer<CChar>, output: (out: Int32, err: Int32), noSignals: inout sigset_t,
        highestDescriptor: Int32, closeRange: CloseRange?, switchTo: (uid: uid_t, gid: gid_t)?
    ) -> Never {
        func fail(_ message: StaticString) -> Never {
            _ = write(STDERR_FILENO, message.utf8Start, message.utf8CodeUnitCount)
            _exit(126)
        }
        _ = setpgid(0, 0)
        for signal in 1..<65 { _ = Glibc.signal(Int32(signal), nil) }
        _ = sigprocmask(SIG_SETMASK, &noSignals, nil)
        let null = open("/dev/null", O_RDONLY)
        guard null >= 0, dup2(null, STDIN_FILENO) >= 0, dup2(output.out, STDOUT_FILENO) >= 0,
            dup2(output.err, STDERR_FILENO) >= 0
        else { _exit(126) }
        if let closeRange, closeRange(3, UInt32.max, 0) == 0 {
        } else {
            var fd: Int32 = 3
            while fd < highestDescriptor {
                _ = close(fd)
                fd += 1
            }
        }
        guard chdir(directory) == 0 else { fail("syncfs: the merge command cannot enter its directory\n") }
        if let switchTo {
            guard setgroups(0, nil) == 0 else { fail("syncfs: cannot drop supplementary groups\n") }
            guard setgid(switchTo.gid) == 0 else { fail("syncfs: cannot change the group\n") }
            guard setuid(switchTo.uid) == 0 else { fail("syncfs: cannot change the user\n") }
            guard setuid(0) != 0, geteuid() != 0 else { fail("syncfs: root could be regained\n") }
        }
        _ = execve("/bin/sh", argv, envp)
        fail("syncfs: cannot run /bin/sh\n")
    }

    private typealias CloseRange = @convention(c) (UInt32, UInt32, Int32) -> Int32

    /// glibc's close_range (2.34+), looked up at run time.
    private static let closeRange: CloseRange? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "close_range") else { return nil }
        return unsafeBitCast(symbol, to: CloseRange.self)
    }()

    private static func errnoText() -> String { String(cString: strerror(errno)) }

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
