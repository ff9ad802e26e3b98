import Foundation
import Glibc
import Synchronization
import Testing

@testable import SyncFS

/// The notify protocol's client side (`SystemdNotifier`) and root's default state directory
/// (`StateDirectory.defaultBase`); the end-to-end behaviour is `MountTests.SystemdUnitTest`.
@Suite(.serialized)
struct SystemdNotifierTests {
    @Test func theVariablesLeaveTheEnvironmentAndAnAbstractSocketGetsTheDatagram() throws {
        let name = "syncfs-notify-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let receiver = try AbstractDatagramSocket(name: name)
        defer { receiver.close() }
        setenv("NOTIFY_SOCKET", "@" + name, 1)
        setenv("WATCHDOG_USEC", "3000000", 1)
        setenv("WATCHDOG_PID", String(getpid()), 1)
        let notifier = try #require(SystemdNotifier.fromEnvironment())
        for variable in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] {
            #expect(getenv(variable) == nil, "\(variable) is still in the environment (children would inherit it)")
        }
        #expect(notifier.watchdogInterval == 1.5)
        #expect(notifier.send("READY=1\nSTATUS=online, up to date"))
        #expect(receiver.next(timeout: 5) == "READY=1\nSTATUS=online, up to date")
        #expect(SystemdNotifier.fromEnvironment() == nil, "read twice")
    }

    @Test func aWatchdogForAnotherProcessAndBadSocketsAreIgnored() {
        let other = SystemdNotifier(
            socketPath: "/run/systemd/notify", watchdogMicroseconds: "2000000", watchdogPID: "1")
        #expect(other != nil && other?.watchdogInterval == nil)
        let mine = SystemdNotifier(
            socketPath: "/run/systemd/notify", watchdogMicroseconds: "2000000", watchdogPID: String(getpid()))
        #expect(mine?.watchdogInterval == 1)
        #expect(SystemdNotifier(socketPath: "notify", watchdogMicroseconds: nil, watchdogPID: nil) == nil)
        #expect(SystemdNotifier(socketPath: "", watchdogMicroseconds: nil, watchdogPID: nil) == nil)
        #expect(SystemdNotifier(socketPath: nil, watchdogMicroseconds: "1000", watchdogPID: nil) == nil)
        let long = "/" + String(repeating: "x", count: 120)
        #expect(SystemdNotifier(socketPath: long, watchdogMicroseconds: nil, watchdogPID: nil) == nil)
        let noWatchdog = SystemdNotifier(socketPath: "@x", watchdogMicroseconds: "0", watchdogPID: nil)
        #expect(noWatchdog != nil && noWatchdog?.watchdogInterval == nil)
    }

    @Test func rootsStateLivesInVarLibWhateverHOMEIs() {
        for home in [nil, "", "/", "/root"] {
            var environment: [String: String] = [:]
            environment["HOME"] = home
            #expect(
                StateDirectory.defaultBase(environment: environment, euid: 0) == "/var/lib", "HOME=\(home ?? "unset")")
        }
        #expect(StateDirectory.defaultBase(environment: ["XDG_STATE_HOME": "/srv/state"], euid: 0) == "/srv/state")
        #expect(StateDirectory.defaultBase(environment: ["HOME": "/home/ann"], euid: 1000) == "/home/ann/.local/state")
        #expect(StateDirectory.legacyRootBase(environment: ["HOME": "/root"], euid: 0) == "/root/.local/state")
        #expect(StateDirectory.legacyRootBase(environment: ["HOME": "/home/ann"], euid: 1000) == nil)
        #expect(StateDirectory.legacyRootBase(environment: ["XDG_STATE_HOME": "/s"], euid: 0) == nil)
    }
}

/// A datagram socket bound in the abstract namespace (`@name` in NOTIFY_SOCKET). Used by one
/// test at a time (its descriptor is only read).
final class AbstractDatagramSocket: @unchecked Sendable {
    private let fd: Int32

    init(name: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw[0] = 0
            for (index, byte) in bytes.enumerated() { raw[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    func next(timeout: Double) -> String? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    func close() { Glibc.close(fd) }
}

/// The watchdog follows the daemon's health (`SystemdNotifier.mountIsLive`): pings stop while the
/// FUSE check does not come back or the engine does not answer, and resume when they do.
@Suite(.serialized)
struct SystemdWatchdogTests {
    @Test func pingsStopWhileAProbeFailsAndResumeAfterwards() async throws {
        let name = "syncfs-watchdog-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let receiver = try AbstractDatagramSocket(name: name)
        defer { receiver.close() }
        // Pings every 0.2 s; the FUSE check counts for max(3 × 0.2, 0.4) = 0.6 s.
        let notifier = try #require(
            SystemdNotifier(socketPath: "@" + name, watchdogMicroseconds: "400000", watchdogPID: nil))
        let fuseAnswers = Mutex(true)
        let engineAnswers = NSCondition()
        let engineBlocked = Mutex(false)
        let probes = SystemdNotifier.Probes(
            isolate: {}, fuseAnswers: { fuseAnswers.withLock { $0 } },
            status: {
                engineAnswers.lock()
                while engineBlocked.withLock({ $0 }) { engineAnswers.wait() }
                engineAnswers.unlock()
                return "online, up to date"
            })
        notifier.mountIsLive(status: "online, up to date", probes: probes)
        #expect(await waiting { receiver.next(timeout: 5) }?.hasPrefix("READY=1") == true)
        #expect(await waiting { receiver.waitFor("WATCHDOG=1", timeout: 10) }, "no ping while healthy")

        fuseAnswers.withLock { $0 = false }
        await waiting { receiver.drain(for: 1.5) }  // pings the last answer still covers
        #expect(
            await waiting { receiver.waitFor("WATCHDOG=1", timeout: 2) } == false, "a ping while the FUSE check fails")
        fuseAnswers.withLock { $0 = true }
        #expect(await waiting { receiver.waitFor("WATCHDOG=1", timeout: 10) }, "no ping after the FUSE check came back")

        engineBlocked.withLock { $0 = true }
        await waiting { receiver.drain(for: 1.5) }
        #expect(
            await waiting { receiver.waitFor("WATCHDOG=1", timeout: 2) } == false,
            "a ping while the engine does not answer")
        func unblockEngine() {
            engineAnswers.lock()
            engineBlocked.withLock { $0 = false }
            engineAnswers.broadcast()
            engineAnswers.unlock()
        }
        unblockEngine()
        #expect(
            await waiting { receiver.waitFor("WATCHDOG=1", timeout: 10) }, "no ping after the engine answered again")

        notifier.stopping()
        #expect(await waiting { receiver.waitFor("STOPPING=1", timeout: 10) })
    }
}

extension AbstractDatagramSocket {
    /// True once a datagram containing `text` arrives within `timeout` seconds.
    func waitFor(_ text: String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while deadline.timeIntervalSinceNow > 0 {
            if let message = next(timeout: deadline.timeIntervalSinceNow), message.contains(text) { return true }
        }
        return false
    }

    /// Reads and drops whatever arrives during `seconds`.
    func drain(for seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while deadline.timeIntervalSinceNow > 0 { _ = next(timeout: deadline.timeIntervalSinceNow) }
    }
}
