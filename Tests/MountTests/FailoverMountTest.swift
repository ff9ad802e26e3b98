import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

/// Mounts given two `serve --database` processes of one container (`mount URL1,URL2`),
/// against the real PostgreSQL and Ceph RGW of the test services: one process is
/// `kill -9`ed under load and the mounts carry on through the other — nothing acknowledged is
/// lost, the writer recovers within seconds, `status` names the server in use, and an upload cut
/// in the middle is never seen half-done and completes through the other server.
@Suite(.serialized)
struct FailoverMountTest {
    /// A writer mount writes and fsyncs file after file (`sync` after every tenth); the first
    /// server is killed after file 25 while uploads are in flight. Every file `sync`
    /// acknowledged, and then every file written, reaches the follower and a new mount.
    @Test func aServeProcessKilledUnderLoadLosesNothingAndTheMountsCarryOnThroughTheOther() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        let token = try backend.initialize(container: "box")
        let first = try backend.startServer()
        let second = try backend.startServer()
        let servers = "\(first.url("box")),\(second.url("box"))"
        let access = ["--upload-delay", "20", "--token-file", token]
        let a = try TestFolder.make(.mount, sharedContainer: servers, mountArguments: access)
        defer { a.tearDown() }
        let b = try TestFolder.make(.mount, sharedContainer: servers, mountArguments: access)
        defer { b.tearDown() }
        let logs = { "\(a.daemonLog())\n\(b.daemonLog())\n\(backend.logs())" }
        try makeDirectory(a.path("w"))
        #expect(a.expectSync(timeout: 60), "\(logs())")
        #expect(waitUntil(timeout: 40) { pathExists(b.path("w")) }, "\(logs())")

        func content(_ index: Int) -> String { "file \(index) " + String(repeating: "x", count: index * 97) }
        func write(_ index: Int) throws {
            try withFile(a.path("w/\(index).txt"), O_WRONLY | O_CREAT | O_TRUNC) { fd in
                try writeAll(fd, Array(content(index).utf8))
                guard fsync(fd) == 0 else { throw TestFolderError(message: "fsync: \(errnoName(errno))") }
            }
        }
        var acknowledged = 0
        let killAfter = 25
        var killed: Date?
        let seenOnB = Mutex<Date?>(nil)
        var watcher: Thread?
        for index in 0..<60 {
            try write(index)
            if index == killAfter {
                kill(first.pid, SIGKILL)
                killed = Date()
                // The first file written after the kill: when the follower has it, both mounts
                // (the writer's commit, the follower's long poll) are through the other server.
                try write(index + 1)
                let marker = b.path("w/\(index + 1).txt")
                let expected = content(index + 1)
                let thread = Thread {
                    if waitUntil(timeout: 120, { try readText(marker) == expected }) {
                        seenOnB.withLock { $0 = Date() }
                    }
                }
                thread.start()
                watcher = thread
                let started = Date()
                #expect(a.expectSync(timeout: 60), "\(logs())")
                print(
                    "failover: writer's first sync after the kill done \(milliseconds(since: killed!)) ms after the kill "
                        + "(sync took \(milliseconds(since: started)) ms)")
            } else if index % 10 == 9 {
                if a.expectSync(timeout: 60) { acknowledged = index + 1 }
            }
        }
        #expect(acknowledged == 60, "a sync failed after the kill")
        #expect(a.expectSync(timeout: 60), "\(logs())")
        #expect(waitUntil(timeout: 60) { seenOnB.withLock { $0 } != nil }, "\(logs())")
        _ = watcher
        if let killed, let seen = seenOnB.withLock({ $0 }) {
            let recovery = seen.timeIntervalSince(killed)
            print(
                "failover: the first file written after kill -9 reached the follower \(Int(recovery * 1000)) ms after the kill"
            )
            // The goal is 5 s; the bound is generous for a loaded machine (doc/performance-log.md has the figure).
            #expect(recovery < 30, "\(recovery) s to recover\n\(logs())")
        }
        // Nothing acknowledged (nor anything else written) is lost: the follower and a new mount
        // (its first server dead at its first mount) have every file.
        for index in 0..<60 {
            #expect(
                waitUntil(timeout: 60) { try readText(b.path("w/\(index).txt")) == content(index) },
                "\(index)\n\(logs())")
        }
        let c = try TestFolder.make(.mount, sharedContainer: servers, mountArguments: access)
        defer { c.tearDown() }
        for index in 0..<60 {
            #expect(
                waitUntil(timeout: 60) { try readText(c.path("w/\(index).txt")) == content(index) },
                "\(index)\n\(c.daemonLog())")
        }
        // `status` names the server in use and why it changed.
        let status = ModelProcess.run([try TestFolder.binaryPath(), "status", a.root], timeout: 60)
        #expect(status.stdout.contains("server: \(second.url("box"))"), "\(status)")
        #expect(status.stdout.contains("switched from \(first.url("box"))"), "\(status)")
        let json = ModelProcess.run([try TestFolder.binaryPath(), "status", a.root, "--json"], timeout: 60)
        let decoded = try JSONDecoder().decode(StatusWithServer.self, from: Data(json.stdout.utf8))
        #expect(decoded.server?.server == second.url("box"), "\(json)")
        #expect(decoded.server?.previous == first.url("box"), "\(json)")
        #expect(a.daemonLog(limit: 100_000).contains("switched from \(first.url("box")) to \(second.url("box"))"))

        // The first server back on its port: after its pause (30 s) the mount uses it again
        // (a write every second gives it calls to make).
        let restarted = try backend.startServer(port: first.port)
        try writeFile(a.path("w/back.txt"), "first is back")
        #expect(
            waitUntil(timeout: 120) {
                sleep(1)  // scenario: a write every second
                try writeFile(a.path("w/back.txt"), "first is back \(Date().timeIntervalSince1970)")
                let now = ModelProcess.run([try TestFolder.binaryPath(), "status", a.root], timeout: 60).stdout
                return now.contains("server: \(restarted.url("box"))")
            }, "\(logs())")
        #expect(a.expectSync(timeout: 60), "\(logs())")
    }

    /// The first server is killed while a large file's chunks are being uploaded through it: no
    /// other mount ever sees a part of the file, and the upload completes through the other.
    @Test func aServeProcessKilledInTheMiddleOfALargeUploadLeavesNoPartialState() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        let token = try backend.initialize(container: "box")
        let first = try backend.startServer()
        let second = try backend.startServer()
        let servers = "\(first.url("box")),\(second.url("box"))"
        let access = ["--upload-delay", "20", "--token-file", token]
        let a = try TestFolder.make(.mount, sharedContainer: servers, mountArguments: access)
        defer { a.tearDown() }
        let b = try TestFolder.make(.mount, sharedContainer: servers, mountArguments: access)
        defer { b.tearDown() }
        let logs = { "\(a.daemonLog())\n\(b.daemonLog())\n\(backend.logs())" }

        let large = try randomBytes(64 << 20)
        try writeFile(a.path("large.bin"), large)
        // Kill the first server once the upload is under way (part of it sent, not all).
        let midUpload = waitUntil(timeout: 120) {
            let status = try a.syncStatus()
            return status.transfers?.contains { $0.direction == "upload" && $0.done > 0 && $0.done < $0.total } == true
        }
        #expect(midUpload, "no upload in progress was seen\n\(logs())")
        kill(first.pid, SIGKILL)
        // Until the commit, the follower sees no file; after it, only the whole file.
        var partial: Int?
        let complete = waitUntil(timeout: 180) {
            guard pathExists(b.path("large.bin")) else { return false }
            let bytes = try readFile(b.path("large.bin"))
            if bytes != large { partial = bytes.count }
            return bytes == large
        }
        #expect(partial == nil, "the follower saw \(partial ?? 0) bytes of \(large.count)")
        #expect(complete, "\(logs())")
        #expect(a.expectSync(timeout: 120), "\(logs())")
        let status = ModelProcess.run([try TestFolder.binaryPath(), "status", a.root], timeout: 60)
        #expect(status.stdout.contains("server: \(second.url("box"))"), "\(status)")
    }

    private struct StatusWithServer: Decodable {
        struct Server: Decodable {
            var server: String
            var previous: String?
        }
        var server: Server?
    }
}

private func milliseconds(since date: Date) -> Int { Int(Date().timeIntervalSince(date) * 1000) }

/// A server list naming another container: refused before anything is mounted, whichever
/// position the other server has, on a first mount and on a later one.
@Suite struct FailoverListCheckTest {
    @Test func aSecondServerThatIsAnotherContainerIsRefused() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(root: base + "/server")
        defer { server.stop() }
        let token = try server.createToken(container: "box")
        // Accepts any token and says its container "box" is container "hostile-box".
        let hostile = try HostileServerProcess.start()
        defer { hostile.stop() }
        try makeDirectory(base + "/mnt")
        defer { if TestFolder.isMounted(base + "/mnt") { TestFolder.lazyUnmount(base + "/mnt") } }
        func mount(_ list: String, state: String) throws -> ModelProcessResult {
            ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "mount", list, base + "/mnt", "--state-dir", base + "/" + state,
                    "--token-file", token,
                ], timeout: 60)
        }
        for (index, list) in ["\(server.url("box")),\(hostile.url)", "\(hostile.url),\(server.url("box"))"].enumerated()
        {
            let result = try mount(list, state: "state-\(index)")
            #expect(result.status == 65, "\(result)")
            #expect(result.stderr.contains("every server in the list must serve the same container"), "\(result)")
            #expect(result.stderr.contains("hostile-box"), "\(result)")
            #expect(!TestFolder.isMounted(base + "/mnt"))
        }
        // A later mount: the state directory recorded the real container; a list adding the
        // other one is refused, naming it.
        let first = try mount(server.url("box"), state: "state-later")
        #expect(first.ok, "\(first)")
        #expect(ModelProcess.run([try TestFolder.binaryPath(), "unmount", base + "/mnt"], timeout: 60).ok)
        let later = try mount("\(server.url("box")),\(hostile.url)", state: "state-later")
        #expect(later.status == 65, "\(later)")
        #expect(later.stderr.contains("is container hostile-box"), "\(later)")
        #expect(later.stderr.contains("remove \(hostile.url) from the server list"), "\(later)")
        #expect(!TestFolder.isMounted(base + "/mnt"))
        // The same server twice is a usage error.
        let twice = try mount("\(server.url("box")),\(server.url("box"))", state: "state-twice")
        #expect(twice.status == 64, "\(twice)")
        #expect(twice.stderr.contains("twice"), "\(twice)")
    }
}
