import Foundation
import Glibc
import TestSupport
import Testing

/// The storage behind a server goes away while a mount syncs through it (doc/SEMANTICS.md,
/// "Offline"): the server answers `503 storageUnavailable` and logs it at warning level; the
/// mount's `status` says `server storage unavailable since …` (not "online") with its changes
/// waiting, and its log says so once; when the storage is back, the change goes up by itself.
///
/// The outage here is the embedded server's: the container's directory cannot be looked at (a
/// symlink loop in its place, as a disk gone away answers an error other than "missing").
@Suite struct StorageOutageMountTest {
    static func headline(_ folder: TestFolder) throws -> String {
        let result = ModelProcess.run([try TestFolder.binaryPath(), "status", folder.root], timeout: 60)
        return String(result.stdout.split(separator: "\n").first ?? "")
    }

    @Test func aMountSaysWhenTheServersStorageIsUnavailable() throws {
        try SyncedMounts.with(uploadDelay: 20, overServer: true) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let server = try #require(mounts.server)
            try writeFile(a.path("before.txt"), "before")
            try #require(a.expectSync())

            let box = server.root + "/box"
            try posix("rename") { rename(box, box + ".away") }
            try posix("symlink") { symlink(box, box) }
            try writeFile(a.path("during.txt"), "during the outage")
            var headline = ""
            #expect(
                waitUntil(timeout: 30) {
                    headline = try Self.headline(a)
                    return headline.contains("server storage unavailable since")
                }, "\(headline)\n\(mounts.logs())")
            #expect(headline.contains("1 change waiting"), "\(headline)")
            #expect(a.daemonLog().contains("the server cannot reach its storage"), "\(a.daemonLog())")
            let serverLog = String(decoding: (try? readFile(server.logPath)) ?? [], as: UTF8.self)
            #expect(
                serverLog.split(separator: "\n").filter { $0.contains("warning") && $0.contains("storage unavailable") }
                    .count == 1, "logged once: \(serverLog.suffix(3000))")

            try posix("unlink") { unlink(box) }
            try posix("rename") { rename(box + ".away", box) }
            #expect(
                waitUntil(timeout: 60) { try readText(b.path("during.txt")) == "during the outage" },
                "\(mounts.logs())")
            #expect(waitUntil(timeout: 30) { try Self.headline(a).contains("online, up to date") })
        }
    }
}
