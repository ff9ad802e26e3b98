import Foundation
import Glibc
import TestSupport
import Testing

/// Two devices, each with a token of its own, share an encrypted container through `serve` on
/// both backends: the second joins by approval after the codes are compared, both write, and once
/// removed the second reads nothing written after.
@Suite(.serialized)
struct EncryptedServerMembersMountTest {
    @Test(arguments: MountServerBackend.allCases)
    func aSecondDeviceJoinsThroughServeAndOnceRemovedReadsNothingNew(backend: MountServerBackend) throws {
        let base = try TemporaryDirectory()
        let server = try ServerProcess.start(root: base.path + "/server", backend: backend)
        defer { server.tearDown() }
        let url = server.url("box")
        let binary = try TestFolder.binaryPath()
        let deviceA = [
            "--token-file", try server.createToken(container: "box", label: "a"), "--device-key", base.path + "/keys/a",
        ]
        let deviceB = [
            "--token-file", try server.createToken(container: "box", label: "b"), "--device-key", base.path + "/keys/b",
        ]
        let a = try TestFolder.make(
            .mount, sharedContainer: url, mountArguments: ["--upload-delay", "20", "--create-encrypted"] + deviceA)
        defer { a.tearDown() }
        try writeFile(a.path("from-a.txt"), "written on A")
        #expect(a.expectSync(timeout: 60), "\(a.daemonLog())")

        // B is not a member: its first mount asks to join; A approves the code B showed.
        let bRoot = base.path + "/b-asks"
        try makeDirectory(bRoot)
        let asked = ModelProcess.run(
            [binary, "mount", url, bRoot, "--state-dir", base.path + "/b-asks-state"] + deviceB, timeout: 60)
        if TestFolder.isMounted(bRoot) { TestFolder.lazyUnmount(bRoot) }
        #expect(asked.status == 75, "\(asked)")
        let code = try #require(
            asked.stderr.range(of: "([0-9]{5} ){5}[0-9]{5}", options: .regularExpression).map {
                String(asked.stderr[$0])
            })
        let approved = ModelProcess.run([binary, "encryption", "approve", url, code] + deviceA, timeout: 60)
        #expect(approved.ok, "\(approved)")
        let admission = try #require(
            approved.stdout.range(of: "([0-9]{5} ){3}[0-9]{5}", options: .regularExpression).map {
                String(approved.stdout[$0])
            })
        // A wrong admission code is refused: nothing is mounted.
        let wrong = ModelProcess.run(
            [
                binary, "mount", url, bRoot, "--state-dir", base.path + "/b-wrong", "--admission-code",
                "00000 00000 00000 00001",
            ]
                + deviceB, timeout: 60)
        if TestFolder.isMounted(bRoot) { TestFolder.lazyUnmount(bRoot) }
        #expect(wrong.status == 65 && wrong.stderr.contains("admission code"), "\(wrong)")

        let b = try TestFolder.make(
            .mount, sharedContainer: url,
            mountArguments: ["--upload-delay", "20", "--admission-code", admission] + deviceB
        )
        defer { b.tearDown() }
        #expect(waitUntil(timeout: 30) { try readText(b.path("from-a.txt")) == "written on A" }, "\(b.daemonLog())")
        try writeFile(b.path("from-b.txt"), "written on B")
        #expect(waitUntil(timeout: 30) { try readText(a.path("from-b.txt")) == "written on B" }, "\(a.daemonLog())")

        // B is removed: what A writes next is of a new epoch, which B cannot open.
        let seenByB = ModelProcess.run([binary, "encryption", "devices", url] + deviceB, timeout: 60)
        let bLine = try #require(
            seenByB.stdout.split(separator: "\n").first { $0.contains("(this device)") }, "\(seenByB)")
        let bKey = String(try #require(bLine.split(separator: " ").dropFirst().first))
        let removed = ModelProcess.run([binary, "encryption", "remove", url, bKey] + deviceA, timeout: 60)
        #expect(removed.ok, "\(removed)")
        try writeFile(a.path("after-removal.txt"), "B must not read this")
        #expect(a.expectSync(timeout: 60), "\(a.daemonLog())")
        #expect(waitUntil(timeout: 30) { b.daemonLog().contains("no key of epoch 1") }, "\(b.daemonLog())")
        #expect(!FileManager.default.fileExists(atPath: b.path("after-removal.txt")))
        #expect(try readText(b.path("from-b.txt")) == "written on B", "what B wrote stays on B")
    }
}
