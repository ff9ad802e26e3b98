import Foundation
import Glibc
import Testing

/// Private by default (doc/FORMATS.md, "Permissions"; doc/CLI.md, "The runtime
/// directory"): another local user can read nothing a root mount keeps on disk, cannot talk to
/// its daemon, and cannot hijack the registry; an idle client never delays another.
@Suite(.serialized)
struct PrivacyMountTest {
    /// Writes a private folder and file with an xattr through the mount and syncs them.
    private func writeSecrets(_ daemon: PrivateDaemon) throws {
        try makeDirectory(daemon.mountpoint + "/secret", mode: 0o700)
        try writeFile(daemon.mountpoint + "/secret/names-are-private.txt", "TOPSECRET content", mode: 0o600)
        try posix("setxattr") {
            Linux.setxattr(daemon.mountpoint + "/secret/names-are-private.txt", "user.note", bytes("xattr-secret"), 0)
        }
        let sync = try daemon.run(["sync", daemon.mountpoint])
        #expect(sync.status == 0, "sync: \(sync.output)")
    }

    @Test func everythingIsPrivateUnderUmaskZeroAndLooseDirectoriesAreTightened() throws {
        let daemon = try PrivateDaemon()
        defer { daemon.tearDown() }
        // The user pre-created these 0777 (and a 0644 log from an older release); the mount
        // tightens its own.
        try makeDirectory(daemon.runtime, mode: 0o755)
        for directory in [daemon.state, daemon.container, daemon.runtime + "/syncfs"] {
            try makeDirectory(directory, mode: 0o777)
            try posix("chmod") { chmod(directory, 0o777) }
        }
        try writeFile(daemon.state + "/syncfs.log", "old log\n")
        try posix("chmod") { chmod(daemon.state + "/syncfs.log", 0o644) }
        if let failure = try daemon.start(umask: "000") {
            Issue.record("mount failed (\(failure.status)): \(failure.log)")
            return
        }
        try writeSecrets(daemon)

        var checked = 0
        for root in [daemon.container, daemon.state, daemon.runtime] {
            var info = stat()
            try posix("lstat") { lstat(root, &info) }
            if root != daemon.runtime {
                #expect(info.st_mode & 0o777 == 0o700, "\(root) has mode \(String(info.st_mode & 0o777, radix: 8))")
            }
            for (path, mode) in walkModes(root) {
                let kind = mode & S_IFMT
                let expected: mode_t = kind == S_IFDIR ? 0o700 : 0o600
                #expect(mode & 0o7777 == expected, "\(path) has mode \(String(mode & 0o7777, radix: 8))")
                checked += 1
            }
        }
        let names = walkModes(daemon.state).map(\.path) + walkModes(daemon.container).map(\.path)
        #expect(names.contains(daemon.state + "/state.db-wal"), "\(names)")
        #expect(names.contains(daemon.container + "/container.db"), "\(names)")
        #expect(names.contains { $0.hasPrefix(daemon.container + "/chunks/") && $0.count > 80 }, "\(names)")
        #expect(names.contains { $0.hasPrefix(daemon.state + "/cache/") }, "\(names)")
        #expect(checked > 15, "walked only \(checked) paths")

        // Another user reads neither names nor content of anything there.
        let paths =
            [daemon.container, daemon.state, daemon.runtime + "/syncfs"]
            + names + walkModes(daemon.runtime).map(\.path)
        let script = """
            for p in "$@"; do
              if [ -d "$p" ]; then ls -a "$p" >/dev/null 2>&1 && echo "LISTED $p"
              else cat "$p" >/dev/null 2>&1 && echo "READ $p"; fi
            done; echo checked
            """
        let probe = try daemon.run(["/bin/sh", "-c", script, "sh"] + paths, asNobody: true, program: true)
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "checked", "\(probe.output)")

        // …and cannot reach the root daemon: its registry is closed to nobody.
        let status = try daemon.run(["sync", daemon.mountpoint], asNobody: true, timeout: 20)
        #expect(status.status != 0, "nobody's sync: \(status.output)")
    }

    @Test func theDaemonAnswersOnlyItsOwnerEvenThroughAnOpenedPath() throws {
        let daemon = try PrivateDaemon()
        defer { daemon.tearDown() }
        if let failure = try daemon.start() {
            Issue.record("mount failed (\(failure.status)): \(failure.log)")
            return
        }
        // Open the way to the socket (as a careless admin might), then let nobody use it from a
        // registry of its own: only SO_PEERCRED stands between nobody and the daemon.
        guard let socket = daemon.controlSocket() else { return }
        let nobodyRuntime = try daemon.openSocketToNobody(socket)

        let sync = try daemon.run(["sync", daemon.mountpoint], asNobody: true, runtime: nobodyRuntime, timeout: 20)
        #expect(sync.status != 0, "\(sync.output)")
        #expect(sync.output.contains("not allowed"), "\(sync.output)")
        let status = try daemon.run(["status", daemon.mountpoint], asNobody: true, runtime: nobodyRuntime, timeout: 20)
        #expect(status.status != 0, "\(status.output)")
        #expect(status.output.contains("not allowed"), "\(status.output)")
        try daemon.closeRuntime()
        let mine = try daemon.run(["sync", daemon.mountpoint])
        #expect(mine.status == 0, "the owner still gets answers: \(mine.output)")
    }

    @Test func aRuntimeDirectoryOfAnotherUserIsRefusedByTheMountAndTheCLI() throws {
        let daemon = try PrivateDaemon()
        defer { daemon.tearDown() }
        // nobody pre-creates the registry (as it could in /tmp) before root mounts.
        try makeDirectory(daemon.runtime, mode: 0o755)
        try posix("chmod") { chmod(daemon.runtime, 0o1777) }
        let made = try daemon.run(
            ["/bin/mkdir", "-m", "0777", "-p", daemon.runtime + "/syncfs/mounts"], asNobody: true, program: true)
        #expect(made.status == 0, "\(made.output)")

        let failure = try daemon.start()
        #expect(failure != nil, "the mount used a runtime directory owned by nobody")
        #expect(!TestFolder.isMounted(daemon.mountpoint))
        if let failure {
            #expect(failure.status != 0)
            #expect(failure.log.contains("belongs to uid 65534"), "\(failure.log)")
        }
        daemon.stop()

        // A fake daemon on a socket in nobody's registry: the CLI never talks to it.
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        let hash = try fakeSocketName(daemon)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array((daemon.runtime + "/syncfs/mounts/" + hash).utf8) + [0]
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0 && listen(listener, 8) == 0, "cannot plant the fake socket: \(errnoName(errno))")
        _ = fcntl(listener, F_SETFL, O_NONBLOCK)
        let sync = try daemon.run(["sync", daemon.mountpoint], timeout: 20)
        #expect(sync.status != 0, "sync trusted a registry of nobody: \(sync.output)")
        #expect(sync.output.contains("not trusting"), "\(sync.output)")
        let status = try daemon.run(["status", daemon.mountpoint], timeout: 20)
        #expect(status.status != 0, "status: \(status.output)")
        #expect(accept(listener, nil, nil) < 0, "the CLI connected to the fake socket")

        // A symlinked registry is refused too.
        try FileManager.default.removeItem(atPath: daemon.runtime + "/syncfs")
        try makeDirectory(daemon.base + "/elsewhere", mode: 0o700)
        try posix("symlink") { symlink(daemon.base + "/elsewhere", daemon.runtime + "/syncfs") }
        let again = try daemon.start()
        #expect(again != nil, "the mount followed a symlinked runtime directory")
        #expect(!TestFolder.isMounted(daemon.mountpoint))
    }

    /// The name `<hash>.sock` the daemon uses for this mount point (`MountRegistry`: FNV-1a, 64
    /// bits, of the mount point's path).
    private func fakeSocketName(_ daemon: PrivateDaemon) throws -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in daemon.mountpoint.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16) + ".sock"
    }

    @Test func idleClientsNeverDelayStatus() throws {
        let daemon = try PrivateDaemon()
        defer { daemon.tearDown() }
        if let failure = try daemon.start() {
            Issue.record("mount failed (\(failure.status)): \(failure.log)")
            return
        }
        guard let socketPath = daemon.controlSocket() else { return }
        var idle: [Int32] = []
        defer { for fd in idle { close(fd) } }
        for index in 0..<6 {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let path = Array(socketPath.utf8) + [0]
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            #expect(connected == 0, "connect: \(errnoName(errno))")
            // The last one is stuck half-way through a request.
            if index == 5 { _ = write(fd, "{\"command\":", 11) }
            idle.append(fd)
        }
        let started = Date()
        let status = try daemon.run(["status", daemon.mountpoint], timeout: 30)
        let elapsed = Date().timeIntervalSince(started)
        #expect(status.status == 0, "\(status.output)")
        #expect(elapsed < 2, "status took \(elapsed) s while 6 clients hung on")
        let sync = try daemon.run(["sync", daemon.mountpoint], timeout: 30)
        #expect(sync.status == 0, "\(sync.output)")

        // The daemon closes the idle ones after its request deadline (5 s).
        for fd in idle {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 10_000)
            var byte: UInt8 = 0
            let count = ready == 1 ? read(fd, &byte, 1) : -2
            #expect(
                count == 0,
                "an idle client was not closed within 10 s (poll \(ready), revents \(descriptor.revents), read \(count))"
            )
        }
    }
}
