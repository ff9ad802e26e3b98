import Foundation
import Glibc
import TestSupport
import Testing

/// A server that hangs (doc/SEMANTICS.md, "A server that does not answer"): a
/// `syncfs-mount serve` child is stopped with SIGSTOP, so the kernel still accepts its connections
/// and takes the requests, but nothing answers. Readers of placeholders must not wait forever: a
/// signal ends their read with EINTR at once, other operations on the mount go on, a read gives up
/// with ENETDOWN after the chunk deadline, and everything reads again once the server is resumed.
///
/// Timing bounds here are generous (a loaded 2-core machine); the typical figures are in
/// doc/performance-log.md, "A server that does not answer".
@Suite(.serialized)
struct HungServerTest {
    /// Mounts A and B over a server; A writes `files`, B sees them as placeholders.
    private static func withPlaceholders(
        _ files: [String: [UInt8]], _ body: (SyncedMounts, ServerProcess) throws -> Void
    ) throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: true) { mounts in
            let server = try #require(mounts.server)
            try writeFiles(files, under: mounts.a.root)
            try #require(mounts.a.expectSync(timeout: 60))
            try #require(expectNamesArrive(files, under: mounts.b.root, timeout: 60, "B attaching"))
            for path in files.keys.sorted().prefix(3) {
                #expect(describeState(mounts.b.path(path)) == "online", "\(path) must be a placeholder on B")
            }
            server.suspend()
            // Resumed before the mounts are torn down (whatever happens in `body`): blocked reads
            // end, and the unmounts do not wait on a server that cannot answer.
            defer { server.resume() }
            try body(mounts, server)
        }
    }

    /// `withPlaceholders` of the one file `name`, with an `InterruptibleReader` started on it on B
    /// (reading, or `forWriting`/`direct` as `InterruptibleReader.start` says) and inside its read
    /// or open — the daemon has the request: B's `status` shows the file's download — when `body`
    /// runs. Afterwards the server is resumed, then the program finished (in that order: a blocked
    /// program ends).
    private static func withProgramWaiting(
        on name: String, _ content: [UInt8], forWriting: Bool = false, direct: Bool = false,
        _ body: (SyncedMounts, ServerProcess, InterruptibleReader) throws -> Void
    ) throws {
        try withPlaceholders([name: content]) { mounts, server in
            let program = try InterruptibleReader.start(mounts.b.path(name), forWriting: forWriting, direct: direct)
            defer {
                server.resume()
                program.finish()
            }
            try #require(program.waitUntilReading(), "the program did not start: \(program.output())")
            let requested = waitUntil(timeout: 30) {
                try mounts.b.syncStatus().transfers?.contains { $0.path == name && $0.direction == "download" } == true
            }
            try #require(requested, "B never started downloading \(name)\n\(mounts.b.daemonLog(limit: 1500))")
            try body(mounts, server, program)
        }
    }

    /// A program reading a placeholder while the server hangs gets SIGINT (it handles the signal,
    /// as Python does): its read returns EINTR at once instead of after the download's deadline
    /// (89 s before this was fixed). Once the server is back the file reads whole.
    @Test func aReaderInterruptedWhileTheServerHangsGetsEINTRAtOnce() throws {
        let content = try randomBytes(1 << 20)
        try Self.withProgramWaiting(on: "waiting.bin", content) { mounts, server, reader in
            #expect(reader.exitStatus == nil, "the read ended before the signal: \(reader.output())")
            let sent = Date()
            kill(reader.pid, SIGINT)
            let status = reader.waitForExit(timeout: 5)
            let seconds = Date().timeIntervalSince(sent)
            #expect(status != nil, "the reader was still blocked 5 s after SIGINT\n\(mounts.b.daemonLog())")
            let output = reader.output()
            #expect(output.contains("interrupted"), "the read must end with EINTR: \(output)")
            print("HungServerTest: EINTR \(String(format: "%.3f", seconds)) s after SIGINT (\(output))")

            server.resume()
            let readable = waitUntil(timeout: 60) { sameBytes(try readFile(mounts.b.path("waiting.bin")), content) }
            #expect(readable, "the file did not read back within 60 s of the server's return\n\(mounts.logs())")
        }
    }

    /// A program reading a placeholder while the server hangs, when another program truncates the
    /// file (`O_TRUNC`, which downloads nothing): the download is cancelled and the read is
    /// answered from the truncated file — 0 bytes, end of file, or zeros where the kernel had not
    /// yet set the new size — at once, not with ESTALE (doc/SEMANTICS.md, "Placeholders"). The
    /// reader uses `O_DIRECT`: a failed readahead READ would be hidden by the kernel's own second
    /// READ of the page.
    @Test func aReaderWaitingWhenTheFileIsTruncatedReadsTheTruncatedFile() throws {
        let content = try randomBytes(1 << 20)
        try Self.withProgramWaiting(on: "cut.bin", content, direct: true) { mounts, _, reader in
            // Still waiting: no answer yet (zeros later come from the truncation, not a hole here).
            try #require(!reader.output().contains("read "), "the read ended before the truncation: \(reader.output())")
            let descriptor = open(mounts.b.path("cut.bin"), O_WRONLY | O_TRUNC | O_CLOEXEC)
            try #require(descriptor >= 0, "O_TRUNC of a placeholder downloads nothing: errno \(errno)")
            close(descriptor)
            let status = reader.waitForExit(timeout: 5)
            #expect(status != nil, "the reader was still blocked 5 s after the truncation\n\(mounts.b.daemonLog())")
            let output = reader.output()
            // End of file; or, when the kernel had not yet set the size the truncation answered
            // (it does so in the truncating thread after the answer), zeros up to the old size:
            // the kernel's writeback cache fills a short read (doc/SEMANTICS.md, "Placeholders").
            #expect(
                output.contains("read 0 ") || output.contains("zero-filled"),
                "the read must see the truncated file: \(output)\n\(mounts.b.daemonLog())")
            print("HungServerTest: the read after the truncation: \(output)")
            var info = stat()
            #expect(stat(mounts.b.path("cut.bin"), &info) == 0 && info.st_size == 0)
        }
    }

    /// An open for writing of a placeholder downloads it whole first, on the request: on a hung
    /// server a SIGINT ends it with EINTR too (looked for every 200 ms).
    @Test func anOpenForWritingInterruptedWhileTheServerHangsGetsEINTR() throws {
        let content = try randomBytes(1 << 20)
        try Self.withProgramWaiting(on: "edit.bin", content, forWriting: true) { mounts, _, writer in
            #expect(writer.waitForExit(timeout: 0) == nil, "the open ended before the signal: \(writer.output())")
            let sent = Date()
            kill(writer.pid, SIGINT)
            let status = writer.waitForExit(timeout: 5)
            let seconds = Date().timeIntervalSince(sent)
            #expect(status != nil, "the open was still blocked 5 s after SIGINT\n\(mounts.b.daemonLog())")
            #expect(writer.output().contains("interrupted"), "the open must end with EINTR: \(writer.output())")
            print("HungServerTest: open for writing: EINTR \(String(format: "%.3f", seconds)) s after SIGINT")
        }
    }

    /// A signal that only informs (SIGWINCH, like SIGCHLD or Go's SIGURG) does not end a waiting
    /// read — a local disk never interrupts a read of a file — while a SIGINT that comes after it
    /// still does (the kernel sends one INTERRUPT per request: the daemon looks again).
    @Test func aSignalThatOnlyInformsLetsTheReadGoOnAndALaterSIGINTEndsIt() throws {
        let content = try randomBytes(1 << 20)
        try Self.withProgramWaiting(on: "waiting.bin", content) { mounts, _, reader in
            kill(reader.pid, SIGWINCH)
            usleep(2_000_000)  // scenario: time for the read to end, which it must not
            #expect(
                reader.waitForExit(timeout: 0) == nil,
                "SIGWINCH ended the read (EINTR from a regular file): \(reader.output())")
            let sent = Date()
            kill(reader.pid, SIGINT)
            let status = reader.waitForExit(timeout: 5)
            let seconds = Date().timeIntervalSince(sent)
            #expect(status != nil, "the reader was still blocked 5 s after SIGINT\n\(mounts.b.daemonLog())")
            #expect(reader.output().contains("interrupted"), "the read must end with EINTR: \(reader.output())")
            print("HungServerTest: EINTR \(String(format: "%.3f", seconds)) s after a SIGINT that followed a SIGWINCH")
        }
    }

    /// With 40 readers waiting on a hung server, the mount still answers everything else at once
    /// (creating a file stalled 2.75 s with 20 readers before: the readers held the daemon's
    /// worker threads and the kernel's background slots). After SIGCONT every read succeeds.
    @Test func otherOperationsAnswerWhileManyReadersWaitOnAHungServer() throws {
        var files: [String: [UInt8]] = [:]
        for index in 0..<40 { files["p/f\(index).bin"] = try randomBytes(64 << 10) }
        try Self.withPlaceholders(files) { mounts, server in
            let b = mounts.b
            let outcomes = LockedValue<[Int: String]>([:])
            let group = DispatchGroup()
            for index in 0..<40 {
                let path = b.path("p/f\(index).bin")
                let expected = files["p/f\(index).bin"]!
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    let outcome: String
                    do {
                        outcome = sameBytes(try readFile(path), expected) ? "ok" : "wrong bytes"
                    } catch {
                        outcome = "\(error)"
                    }
                    outcomes.withLock { $0[index] = outcome }
                }
            }
            usleep(1_500_000)  // every reader is inside its read
            #expect(outcomes.current.isEmpty, "reads returned while the server hangs: \(outcomes.current)")

            var slowest = (name: "", seconds: 0.0)
            func timed(_ name: String, _ operation: () throws -> Void) {
                let started = Date()
                do {
                    try operation()
                } catch {
                    Issue.record("\(name) failed while readers wait: \(error)")
                }
                let seconds = Date().timeIntervalSince(started)
                if seconds > slowest.seconds { slowest = (name, seconds) }
                #expect(seconds < 2, "\(name) took \(seconds) s while 40 readers wait on a hung server")
            }
            for round in 0..<3 {
                timed("create+write+close") { try writeFile(b.path("new-\(round).txt"), "written while hung") }
                timed("mkdir") { try makeDirectory(b.path("dir-\(round)")) }
                timed("readdir") { _ = try listDirectory(b.path("p")) }
                timed("stat") { _ = try lstatPath(b.path("new-\(round).txt")) }
                timed("getxattr") { _ = try syncfsState(b.path("p/f0.bin")) }
                timed("read local") {
                    let text = try readText(b.path("new-\(round).txt"))
                    #expect(text == "written while hung")
                }
                timed("rename") {
                    try posix("rename") { rename(b.path("new-\(round).txt"), b.path("kept-\(round).txt")) }
                }
                timed("unlink") { try posix("unlink") { unlink(b.path("kept-\(round).txt")) } }
            }
            print("HungServerTest: slowest operation with 40 readers waiting: \(slowest.name) \(slowest.seconds) s")

            server.resume()
            let ended = group.wait(timeout: .now() + 120) == .success
            #expect(ended, "readers still blocked 120 s after the server's return\n\(mounts.logs())")
            // A reader may have given up (ENETDOWN) if the machine was slow; a new read succeeds.
            let failed = outcomes.current.filter { $0.value != "ok" }
            for index in failed.keys.sorted() {
                let path = b.path("p/f\(index).bin")
                let again = waitUntil(timeout: 30) { sameBytes(try readFile(path), files["p/f\(index).bin"]!) }
                #expect(again, "f\(index).bin does not read back after the server's return: \(failed[index]!)")
            }
            #expect(failed.count < 40, "every reader failed: \(failed)")
        }
    }

    /// Unmounting while readers wait on a hung server ends cleanly: the daemon answers the waiting
    /// reads before its FUSE session goes (a reply after it would use freed memory) and exits 0.
    @Test func unmountingWhileReadersWaitOnAHungServerEndsCleanly() throws {
        var files: [String: [UInt8]] = [:]
        for index in 0..<5 { files["w\(index).bin"] = try randomBytes(64 << 10) }
        try Self.withPlaceholders(files) { mounts, server in
            let outcomes = LockedValue<[String]>([])
            let group = DispatchGroup()
            for index in 0..<5 {
                let path = mounts.b.path("w\(index).bin")
                group.enter()
                Thread.detachNewThread {
                    defer { group.leave() }
                    let outcome: String
                    do {
                        outcome = "read \(try readFile(path).count) bytes"
                    } catch {
                        outcome = "\(error)"
                    }
                    outcomes.withLock { $0.append(outcome) }
                }
            }
            usleep(1_500_000)  // scenario: every reader is inside its read
            #expect(outcomes.current.isEmpty, "reads returned while the server hangs: \(outcomes.current)")
            do {
                try mounts.b.unmount()
            } catch {
                Issue.record("unmounting B while readers wait: \(error)")
            }
            let ended = group.wait(timeout: .now() + 60) == .success
            #expect(ended, "readers still blocked 60 s after the unmount")
            print("HungServerTest: readers after the unmount: \(outcomes.current)")
        }
    }

    /// A read of a placeholder on a hung server gives up with ENETDOWN within the chunk deadline
    /// (doc/SEMANTICS.md; 180 s before), and the next reads fail at once while it stays hung.
    @Test func aReadFromAHungServerFailsWithENETDOWNWithinItsDeadline() throws {
        let files: [String: [UInt8]] = ["one.bin": try randomBytes(256 << 10), "two.bin": try randomBytes(256 << 10)]
        try Self.withPlaceholders(files) { mounts, server in
            switch timedRead(mounts.b.path("one.bin"), count: 4096, deadline: 60) {
            case .failed(let code, let seconds):
                #expect(code == ENETDOWN, "reading on a hung server: \(placeholderErrnoName(code))")
                #expect(seconds < 30, "ENETDOWN came after \(seconds) s")
                print("HungServerTest: ENETDOWN after \(String(format: "%.1f", seconds)) s on a hung server")
            case .bytes(let read, _):
                Issue.record("a read on a hung server returned \(read.count) bytes")
            case .blocked:
                Issue.record("a read on a hung server was still blocked after 60 s\n\(mounts.b.daemonLog())")
            }
            switch timedRead(mounts.b.path("two.bin"), count: 4096, deadline: 30) {
            case .failed(let code, let seconds):
                #expect(code == ENETDOWN, "the next read: \(placeholderErrnoName(code))")
                #expect(seconds < 5, "the next read on a server known hung took \(seconds) s")
            case .bytes(let read, _):
                Issue.record("a read on a hung server returned \(read.count) bytes")
            case .blocked:
                Issue.record("the next read on a hung server was still blocked after 30 s")
            }
            server.resume()
            let readable = waitUntil(timeout: 60) {
                sameBytes(try readFile(mounts.b.path("one.bin")), files["one.bin"]!)
            }
            #expect(readable, "the file did not read back within 60 s of the server's return\n\(mounts.logs())")
        }
    }
}

/// A `python3` child that opens a file, says `reading`, and reads 4 KiB with a SIGINT handler that
/// raises (as Python's default KeyboardInterrupt does): it prints `interrupted` if the read ended
/// with EINTR, `read N` if it returned bytes (with `zero-filled` if all were zeros), the error
/// otherwise. A SIGWINCH handler raises too (`informed`), so a read that SIGWINCH ended shows at
/// once.
private final class InterruptibleReader {
    let pid: pid_t
    private let outputFD: Int32
    private var collected: [UInt8] = []
    private(set) var exitStatus: Int32?

    private init(pid: pid_t, outputFD: Int32) {
        self.pid = pid
        self.outputFD = outputFD
    }

    static let script = """
        import os, signal, sys, time
        class Interrupted(Exception):
            pass
        class Informed(Exception):
            pass
        def interrupted(number, frame):
            raise Interrupted()
        def informed(number, frame):
            raise Informed()
        signal.signal(signal.SIGINT, interrupted)
        signal.signal(signal.SIGWINCH, informed)
        writing = len(sys.argv) > 2 and sys.argv[2] == "write"
        direct = len(sys.argv) > 2 and sys.argv[2] == "direct"
        fd = None if writing else os.open(sys.argv[1], os.O_RDONLY | (os.O_DIRECT if direct else 0))
        print("reading", flush=True)
        started = time.monotonic()
        try:
            if writing:
                fd = os.open(sys.argv[1], os.O_WRONLY)
                print("opened", round(time.monotonic() - started, 3), flush=True)
            else:
                data = os.pread(fd, 4096, 0)
                zeros = " zero-filled" if data and data.count(0) == len(data) else ""
                print("read", len(data), round(time.monotonic() - started, 3), zeros, flush=True)
        except Interrupted:
            print("interrupted", round(time.monotonic() - started, 3), flush=True)
        except Informed:
            print("informed", round(time.monotonic() - started, 3), flush=True)
        except OSError as error:
            print("error", error.errno, round(time.monotonic() - started, 3), flush=True)
        """

    /// `forWriting`: instead of reading, it opens the file `O_WRONLY` (which downloads a placeholder
    /// whole first) and prints `opened`. `direct`: it reads with `O_DIRECT`, so its READ is its
    /// own, never the kernel's readahead (whose failure the kernel hides by reading the page again).
    static func start(_ path: String, forWriting: Bool = false, direct: Bool = false) throws -> InterruptibleReader {
        var pipeEnds: [Int32] = [0, 0]
        try posix("pipe") { pipe(&pipeEnds) }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            close(null)
            close(pipeEnds[1])
        }
        let mode = forWriting ? ["write"] : direct ? ["direct"] : []
        let pid = try ChildProcess.spawn(
            [try HostileServerProcess.python(), "-c", script, path] + mode, stdin: null,
            stdout: pipeEnds[1],
            stderr: pipeEnds[1])
        return InterruptibleReader(pid: pid, outputFD: pipeEnds[0])
    }

    /// Waits (30 s at most) for the `reading` line.
    func waitUntilReading() -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            drain(timeout: 0.1)
            if String(decoding: collected, as: UTF8.self).contains("reading") { return true }
            if exitStatus == nil, let status = TestFolder.waitForExit(pid, timeout: 0) { exitStatus = status }
            if exitStatus != nil { return false }
        }
        return false
    }

    /// The exit status once it exited within `timeout` seconds, else nil.
    func waitForExit(timeout: Double) -> Int32? {
        if exitStatus == nil { exitStatus = TestFolder.waitForExit(pid, timeout: timeout) }
        return exitStatus
    }

    /// Everything it printed so far.
    func output() -> String {
        drain(timeout: 0)
        return String(decoding: collected, as: UTF8.self)
    }

    private func drain(timeout: Double) {
        var descriptor = pollfd(fd: outputFD, events: Int16(POLLIN), revents: 0)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var wait = Int32(timeout * 1000)
        while poll(&descriptor, 1, wait) > 0 {
            let count = read(outputFD, &buffer, buffer.count)
            if count <= 0 { break }
            collected += buffer[0..<count]
            wait = 0
        }
    }

    /// Kills it and reaps it (call after resuming the server: a read the daemon holds ends only
    /// when the daemon answers).
    func finish() {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            exitStatus = TestFolder.waitForExit(pid, timeout: 120)
        }
        close(outputFD)
    }
}
