import Foundation
import Glibc
import TestSupport
import Testing

/// Mounts that sync through `syncfs-mount serve --database postgres://… --chunk-store s3://…`,
/// against the real PostgreSQL and Ceph RGW the test services run: the server keeps
/// no container on its disk, and several server processes serve one container.
@Suite(.serialized)
struct DatabaseServerMountTest {
    @Test func twoMountsSyncAFileARenameAndADeleteThroughPostgresAndS3() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        let token = try backend.initialize(container: "box")
        let server = try backend.startServer()
        let access = ["--upload-delay", "20", "--token-file", token]
        let a = try TestFolder.make(.mount, sharedContainer: server.url("box"), mountArguments: access)
        defer { a.tearDown() }
        let b = try TestFolder.make(.mount, sharedContainer: server.url("box"), mountArguments: access)
        defer { b.tearDown() }
        let logs = { "\(a.daemonLog())\n\(b.daemonLog())\n\(backend.logs())" }

        let large = try randomBytes(3 << 20)
        try makeDirectory(a.path("docs"))
        try writeFile(a.path("docs/note.txt"), "from A")
        try writeFile(a.path("docs/large.bin"), large)
        #expect(waitUntil(timeout: 40) { try readText(b.path("docs/note.txt")) == "from A" }, "\(logs())")
        #expect(waitUntil(timeout: 40) { try readFile(b.path("docs/large.bin")) == large }, "\(logs())")

        try posix("rename") { rename(b.path("docs"), b.path("papers")) }
        #expect(waitUntil(timeout: 40) { pathExists(a.path("papers/note.txt")) }, "\(logs())")
        #expect(!pathExists(a.path("docs")))

        try posix("unlink") { unlink(a.path("papers/large.bin")) }
        #expect(waitUntil(timeout: 40) { !pathExists(b.path("papers/large.bin")) }, "\(logs())")
        #expect(try readText(b.path("papers/note.txt")) == "from A")
        // The container is the database's: its entries and chunk records are rows there.
        #expect(try Int(backend.value("SELECT count(*) FROM syncfs_chunks")) ?? 0 >= 2)
        #expect(try backend.value("SELECT count(*) FROM syncfs_containers WHERE name = 'box'") == "1")
        // Nothing of the container is on the server's disk: only the token database.
        let served = try FileManager.default.contentsOfDirectory(atPath: backend.tokensDir)
        #expect(served == [".syncfs-server"], "\(served)")
    }

    /// Two `serve` processes on one database and bucket: a commit through one reaches a mount
    /// long-polling the other (PostgreSQL LISTEN/NOTIFY, the recheck as a backstop).
    @Test func aCommitThroughOneServerReachesAMountOnAnother() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        let token = try backend.initialize(container: "box")
        let first = try backend.startServer()
        let second = try backend.startServer()
        let access = ["--upload-delay", "20", "--token-file", token]
        let a = try TestFolder.make(.mount, sharedContainer: first.url("box"), mountArguments: access)
        defer { a.tearDown() }
        let b = try TestFolder.make(.mount, sharedContainer: second.url("box"), mountArguments: access)
        defer { b.tearDown() }
        let logs = { "\(a.daemonLog())\n\(b.daemonLog())\n\(backend.logs())" }

        let payload = try randomBytes(1 << 20)
        let written = Date()
        try writeFile(a.path("via-first.bin"), payload)
        #expect(waitUntil(timeout: 40) { try readFile(b.path("via-first.bin")) == payload }, "\(logs())")
        // For the report only (a loaded machine may be slow): the backstop recheck is 5 s.
        print("propagation across two serve processes: \(Int(Date().timeIntervalSince(written) * 1000)) ms")
        try writeFile(b.path("via-second.txt"), "from B")
        #expect(waitUntil(timeout: 40) { try readText(a.path("via-second.txt")) == "from B" }, "\(logs())")

        // One process dies: the container and its data are the database's and the bucket's; a
        // mount that reaches the surviving process still sees everything.
        kill(first.pid, SIGKILL)
        try writeFile(b.path("after-kill.txt"), "still here")
        #expect(b.expectSync(timeout: 60), "\(logs())")
        let c = try TestFolder.make(.mount, sharedContainer: second.url("box"), mountArguments: access)
        defer { c.tearDown() }
        #expect(waitUntil(timeout: 40) { try readFile(c.path("via-first.bin")) == payload }, "\(logs())")
        #expect(waitUntil(timeout: 40) { try readText(c.path("after-kill.txt")) == "still here" }, "\(logs())")
    }
}
