import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

/// systemd integration (doc/CLI.md, "systemd"): the shipped units' own command lines, run as
/// systemd would run them (`NOTIFY_SOCKET`, `WATCHDOG_USEC`), speak the notify protocol — READY=1
/// once the mount is live, STATUS lines, WATCHDOG=1 pings, STOPPING=1 at unmount — and their
/// ExecStop unmounts cleanly; `systemd-analyze verify` accepts the units.
@Suite(.serialized)
struct SystemdUnitTest {
    static let unitFiles = ["dist/systemd/user/syncfs@.service", "dist/systemd/system/syncfs@.service"]

    @Test(arguments: unitFiles)
    func theUnitsCommandLinesRunAndSpeakTheNotifyProtocol(unit: String) throws {
        let mount = try BackgroundMount()
        defer { mount.tearDown() }
        let lines = try unitLines(unit)
        #expect(lines["Type"] == "notify" && lines["NotifyAccess"] == "main", "\(unit)")
        #expect(lines["Restart"] == "on-failure" && lines["WatchdogSec"] != nil, "\(unit)")
        // SIGTERM waits up to 30 s for the queue (doc/CLI.md, "Stopping a mount"): systemd must wait longer.
        #expect((lines["TimeoutStopSec"].flatMap(Double.init) ?? 0) > 30, "\(unit)")
        if unit.contains("/system/") { #expect(lines["After"]?.contains("network-online.target") == true) }
        // The configuration the instance names (dist/systemd/example.conf's shape), as systemd expands it.
        let variables = ["CONTAINER": mount.container, "MOUNTPOINT": mount.mountpoint]
        // The example configuration's OPTIONS (they must parse), then this test's own (the last wins).
        let example = try unitLines("dist/systemd/example.conf")
        let exampleOptions = try #require(example["OPTIONS"]).split(separator: " ").map(String.init)
        #expect(!exampleOptions.isEmpty)
        let options = exampleOptions + ["--state-dir", mount.stateDir, "--upload-delay", "2500"]
        let start = try expand(lines["ExecStart"], variables, options: options, binary: mount.binary)
        let stop = try expand(lines["ExecStop"], variables, options: options, binary: mount.binary)

        let socket = try NotifySocket(path: mount.base + "/notify")
        defer { socket.close() }
        var output: [Int32] = [-1, -1]
        try posix("pipe2") { Linux.pipe2(&output, O_CLOEXEC) }
        let devNull = open("/dev/null", O_RDONLY | O_CLOEXEC)
        let environment = ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000"]
        let pid = try TestFolder.spawn(
            ["/usr/bin/env"] + environment.map { "\($0.key)=\($0.value)" } + start, stdin: devNull,
            stdout: output[1], stderr: output[1])
        close(devNull)
        close(output[1])
        defer {
            close(output[0])
            if kill(pid, 0) == 0 && reapedEarly(pid) == nil {
                kill(pid, SIGTERM)
                if TestFolder.waitForExit(pid, timeout: 30) == nil { kill(pid, SIGKILL) }
            }
        }

        let ready = socket.receive(until: 30) { $0.contains("READY=1") }
        #expect(ready != nil, "no READY=1 within 30 s")
        #expect(mount.isMounted, "READY=1 came before the mount was live")
        #expect(ready?.contains("STATUS=online") == true, "READY without a status: \(ready ?? "")")
        let pings = socket.collect(for: 4).filter { $0.contains("WATCHDOG=1") }
        #expect(pings.count >= 2, "WATCHDOG=1 every second with WATCHDOG_USEC=2000000: got \(pings.count) in 4 s")
        // A change waits in the queue (upload delay 2.5 s): the status line follows it, then clears
        // (watched for 8 s, and on until it cleared: the upload's moment is the daemon's).
        try writeFile(mount.mountpoint + "/queued.txt", "queued")
        let statusLines = { (lines: [String]) in lines.filter { $0.hasPrefix("STATUS=") } }
        let statuses = statusLines(
            socket.collect(for: 8, timeout: 60) { lines in
                let statuses = statusLines(lines)
                return statuses.contains("STATUS=online, 1 change waiting")
                    && statuses.last == "STATUS=online, up to date"
            })
        #expect(statuses.contains("STATUS=online, 1 change waiting"), "\(statuses)")
        #expect(statuses.last == "STATUS=online, up to date", "\(statuses)")
        #expect(Set(statuses).count == statuses.count, "a STATUS line repeated without a change: \(statuses)")

        // systemd reaps its main process while ExecStop runs (ExecStop waits for the daemon to go).
        let reaped = Mutex<Int32?>(nil)
        let reaper = Thread { reaped.withLock { $0 = TestFolder.waitForExit(pid, timeout: 150) } }
        reaper.start()
        let stopped = try runProcess(stop, timeout: 120)
        #expect(stopped.status == 0, "ExecStop: \(stopped.output)")
        let stopping = socket.receive(until: 30) { $0.contains("STOPPING=1") }
        #expect(stopping != nil, "no STOPPING=1 at unmount")
        _ = waitUntil(timeout: 30) { reaped.withLock { $0 != nil } }
        let exit = reaped.withLock { $0 }
        #expect(exit == 0, "the daemon exited with \(exit.map(TestFolder.describe) ?? "nothing (still running)")")
        #expect(!mount.isMounted)
    }

    @Test func systemdAnalyzeVerifiesTheUnits() throws {
        guard access("/usr/bin/systemd-analyze", X_OK) == 0 else {
            Issue.record("systemd-analyze is not installed: the units are checked only by the command-line test")
            return
        }
        let binary = try TestFolder.binaryPath()
        let directory = try makeTemporaryDirectory("syncfs-units")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for unit in Self.unitFiles {
            // The installed path is /usr/local/bin/syncfs-mount; verify the built binary in its place.
            let text = try String(contentsOfFile: packageRoot + "/" + unit, encoding: .utf8)
                .replacingOccurrences(of: "/usr/local/bin/syncfs-mount", with: binary)
            let copy = directory + "/syncfs@check.service"
            try text.write(toFile: copy, atomically: true, encoding: .utf8)
            // A user manager needs a runtime directory, which a test runner may not have.
            let result = try runProcess(
                ["/usr/bin/systemd-analyze", "verify", unit.contains("/user/") ? "--user" : "--system", copy],
                environment: ["XDG_RUNTIME_DIR": directory], timeout: 60)
            let problems = result.output.split(separator: "\n").filter { $0.contains("syncfs@") }
            #expect(result.status == 0 && problems.isEmpty, "\(unit): \(result.output)")
        }
    }

    /// The daemon's status if it already exited (not yet reaped by the test), nil if still running.
    private func reapedEarly(_ pid: pid_t) -> Int32? { TestFolder.waitForExit(pid, timeout: 0.1) }

    private var packageRoot: String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }

    /// `Key=value` lines of a unit or environment file (last one wins).
    private func unitLines(_ unit: String) throws -> [String: String] {
        let text = try String(contentsOfFile: packageRoot + "/" + unit, encoding: .utf8)
        var lines: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            lines[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return lines
    }

    /// A command line as systemd runs it: `${VAR}` one word, `$OPTIONS` split into words, the
    /// installed binary replaced by the built one.
    private func expand(
        _ line: String?, _ variables: [String: String], options: [String], binary: String
    ) throws -> [String] {
        guard let line else { throw TestFolderError(message: "the unit has no such line") }
        return line.split(separator: " ").flatMap { word -> [String] in
            if word == "$OPTIONS" { return options }
            if word.hasPrefix("${"), let value = variables[String(word.dropFirst(2).dropLast())] { return [value] }
            return [word == "/usr/local/bin/syncfs-mount" ? binary : String(word)]
        }
    }
}

/// A datagram socket bound where a test says NOTIFY_SOCKET is, as systemd's is.
final class NotifySocket {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PosixError(code: errno, operation: "socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw PosixError(code: errno, operation: "bind \(path)") }
    }

    /// The next datagram within `timeout` seconds, or nil.
    func next(timeout: Double) -> String? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(max(0, timeout) * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// Datagrams until one satisfies `condition` (returned) or `timeout` seconds pass (nil).
    func receive(until timeout: Double, _ condition: (String) -> Bool) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            if let message = next(timeout: deadline.timeIntervalSinceNow), condition(message) { return message }
        }
        return nil
    }

    /// Every datagram's lines received during `seconds`.
    func collect(for seconds: Double) -> [String] {
        collect(for: seconds, timeout: seconds) { _ in true }
    }

    /// Every datagram's lines received during `seconds`, and after that until `complete` says
    /// the lines so far are all that is awaited, or `timeout` seconds have passed.
    func collect(for seconds: Double, timeout: Double, until complete: ([String]) -> Bool) -> [String] {
        let minimum = Date().addingTimeInterval(seconds)
        let deadline = Date().addingTimeInterval(max(seconds, timeout))
        var lines: [String] = []
        while deadline.timeIntervalSinceNow > 0 && (minimum.timeIntervalSinceNow > 0 || !complete(lines)) {
            let wait = minimum.timeIntervalSinceNow > 0 ? minimum.timeIntervalSinceNow : deadline.timeIntervalSinceNow
            if let message = next(timeout: wait) {
                lines += message.split(separator: "\n").map(String.init)
            }
        }
        return lines
    }

    func close() {
        Glibc.close(fd)
        unlink(path)
    }
}
