import Foundation
import Glibc
import TestSupport
import Testing

/// A server that starts lying about an encrypted container, through the built binary: the lying
/// proxy (`LyingProxyProcess`) adds a made-up file to every feed page once told to. The mount
/// reading through it raises an alarm: an `alarm` event, `ALARM` in `status`, the log; the made-up
/// file never shows, and what is written there afterwards stays local, nothing lost.
@Suite(.serialized)
struct EncryptedLiarMountTest {
    @Test func aServerThatInjectsIntoAnEncryptedContainerIsCaughtLoudly() throws {
        let scratch = try makeTemporaryDirectory("syncfs-sealed-liar")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let server = try ServerProcess.start(root: scratch + "/server")
        defer { _ = server.stop() }
        let token = try server.createToken(container: "box")
        let key = scratch + "/device-key"
        let access = ["--token-file", token, "--device-key", key, "--upload-delay", "20"]
        let lieNow = scratch + "/lie-now"
        let liar = try LyingProxyProcess.start(
            upstreamPort: server.port, injectName: "made-up-by-the-server.txt", hideName: "nothing-hidden",
            lieAfter: lieNow)
        defer { liar.stop() }
        let a = try TestFolder.make(
            .mount, sharedContainer: server.url("box"), mountArguments: access + ["--create-encrypted"])
        defer { a.tearDown() }
        let b = try TestFolder.make(
            .mount, sharedContainer: liar.url("box"), mountArguments: access + ["--encrypted"])
        defer { b.tearDown() }
        let logs = { "\(b.daemonLog(limit: 20000))\n---- proxy:\n\(liar.log())" }
        let events = try Watcher.events([b.root, "--timeout", "180"])
        defer { _ = events.stop() }
        #expect(events.waitForErrors(containing: "watching"))

        // Honest at first: a change made on A reaches B through the proxy.
        try writeFile(a.path("before.txt"), "written before the lie")
        #expect(waitUntil(timeout: 60) { try readText(b.path("before.txt")) == "written before the lie" }, "\(logs())")

        // The proxy starts lying; the next page B reads holds the made-up file.
        try writeFile(lieNow, "")
        try writeFile(a.path("after.txt"), "written after the lie began")
        #expect(
            waitUntil(timeout: 60) { events.lines.contains { $0.contains("\"kind\":\"alarm\"") } },
            "events: \(events.output)\n\(logs())")
        let status = ModelProcess.run([try TestFolder.binaryPath(), "status", b.root], timeout: 60)
        #expect(status.stdout.contains("ALARM"), "\(status)")
        #expect(b.daemonLog(limit: 100_000).contains("ALARM"), "\(logs())")
        #expect(!pathExists(b.path("made-up-by-the-server.txt")), "\(logs())")
        #expect(!pathExists(b.path("after.txt")), "nothing is applied after the alarm: \(logs())")

        // Written on B after the alarm: kept here, never taken for lost.
        try writeFile(b.path("kept-here.txt"), "written on B after the alarm")
        #expect(try readText(b.path("kept-here.txt")) == "written on B after the alarm")
        try b.unmount()
        try b.remount()
        #expect(try readText(b.path("kept-here.txt")) == "written on B after the alarm", "\(logs())")
        #expect(try readText(b.path("before.txt")) == "written before the lie")
    }
}
