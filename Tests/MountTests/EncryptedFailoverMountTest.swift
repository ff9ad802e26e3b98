import Foundation
import Glibc
import TestSupport
import Testing

/// An encrypted container on two `serve --database` processes (PostgreSQL + Ceph RGW): one is
/// `kill -9`ed between writes and the mounts carry on through the other, with the ledger checked
/// across the switch (no alarm) and nothing lost.
@Suite(.serialized)
struct EncryptedFailoverMountTest {
    @Test func anEncryptedContainerCarriesOnThroughTheOtherServer() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        let token = try backend.initialize(container: "box")
        let first = try backend.startServer()
        let second = try backend.startServer()
        let servers = "\(first.url("box")),\(second.url("box"))"
        let keys = try TemporaryDirectory()
        let access = ["--upload-delay", "20", "--token-file", token, "--device-key", keys.path + "/device-key"]
        let a = try TestFolder.make(
            .mount, sharedContainer: servers, mountArguments: access + ["--create-encrypted"])
        defer { a.tearDown() }
        let b = try TestFolder.make(.mount, sharedContainer: servers, mountArguments: access + ["--encrypted"])
        defer { b.tearDown() }
        let logs = { "\(a.daemonLog())\n\(b.daemonLog())\n\(backend.logs())" }

        func content(_ index: Int) -> String { "sealed file \(index) " + String(repeating: "y", count: index * 131) }
        for index in 0..<10 { try writeFile(a.path("\(index).txt"), content(index)) }
        #expect(a.expectSync(timeout: 60), "\(logs())")
        kill(first.pid, SIGKILL)
        for index in 10..<20 { try writeFile(a.path("\(index).txt"), content(index)) }
        #expect(a.expectSync(timeout: 120), "\(logs())")
        for index in 0..<20 {
            #expect(
                waitUntil(timeout: 60) { try readText(b.path("\(index).txt")) == content(index) }, "\(index)\n\(logs())"
            )
        }
        for folder in [a, b] {
            let status = ModelProcess.run([try TestFolder.binaryPath(), "status", folder.root], timeout: 60)
            #expect(status.stdout.contains("encryption: end-to-end encrypted"), "\(status)")
            #expect(!status.stdout.contains("ALARM"), "\(status)")
        }
        let status = ModelProcess.run([try TestFolder.binaryPath(), "status", a.root], timeout: 60)
        #expect(status.stdout.contains("server: \(second.url("box"))"), "\(status)")
    }
}
