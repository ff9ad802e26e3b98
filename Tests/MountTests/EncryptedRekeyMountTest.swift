import Foundation
import Glibc
import TestSupport
import Testing

/// `rekey` through the built binary (doc/CLI.md, doc/CRYPTO.md): a second device joins and is
/// removed, the container is re-sealed under the new epoch, and the first device's mounts — the
/// same state directory and a fresh one that downloads everything — still see every byte.
///
/// No plain-directory counterpart: key epochs are a SyncFS notion.
@Suite(.serialized)
struct EncryptedRekeyMountTest {
    @Test func afterRemovingADeviceRekeyReSealsAndTheContentStaysIntact() throws {
        let keys = try TemporaryDirectory()
        let (keyA, keyB) = (keys.path + "/a", keys.path + "/b")
        let binary = try TestFolder.binaryPath()
        let base = try TemporaryDirectory()
        let container = base.path + "/container"
        let recoveryFile = try EncryptedContainerInit.make(
            at: container, deviceKey: keyA, recoveryFile: keys.path + "/recovery"
        ).recoveryFile

        let a = try TestFolder.make(
            .mount, sharedContainer: container, mountArguments: ["--upload-delay", "20", "--device-key", keyA])
        defer { a.tearDown() }
        let large = try randomBytes(1 << 20 + 70_001)
        try makeDirectory(a.path("Reports"))
        try writeFile(a.path("Reports/q3.txt"), "written before the removal")
        try writeFile(a.path("large.bin"), large)
        let synced = ModelProcess.run([binary, "sync", a.root], timeout: 60)
        #expect(synced.ok, "\(synced)\n\(a.daemonLog())")
        try a.unmount()

        // B joins with the recovery key and reads what A wrote; then it is removed.
        let b = try TestFolder.make(
            .mount, sharedContainer: container,
            mountArguments: ["--upload-delay", "20", "--device-key", keyB, "--recovery-key-file", recoveryFile])
        defer { b.tearDown() }
        #expect(
            waitUntil(timeout: 30) { try readText(b.path("Reports/q3.txt")) == "written before the removal" },
            "\(b.daemonLog())")
        try b.unmount()
        let seenByB = ModelProcess.run([binary, "encryption", "devices", container, "--device-key", keyB], timeout: 60)
        let bLine = try #require(
            seenByB.stdout.split(separator: "\n").first { $0.contains("(this device)") }, "\(seenByB)")
        let bKey = String(try #require(bLine.split(separator: " ").dropFirst().first))
        let removed = ModelProcess.run(
            [binary, "encryption", "remove", container, bKey, "--device-key", keyA], timeout: 60)
        #expect(removed.ok, "\(removed)")

        let rekeyed = ModelProcess.run([binary, "rekey", container, "--device-key", keyA], timeout: 120)
        #expect(rekeyed.ok, "\(rekeyed)")
        #expect(rekeyed.stdout.contains("under key epoch 1"), "\(rekeyed)")
        #expect(rekeyed.stdout.contains("Every live file and folder is sealed under key epoch 1"), "\(rekeyed)")
        #expect(rekeyed.stdout.contains("Older versions in history"), "\(rekeyed)")
        // The folder and both files, with every chunk of their content.
        #expect(
            rekeyed.stdout.range(
                of: "Re-sealed [34] entries and [1-9][0-9]* chunks \\(1\\.[0-9] MiB\\)", options: .regularExpression)
                != nil, "\(rekeyed)")
        // A rerun has nothing left to do.
        let again = ModelProcess.run([binary, "rekey", container, "--device-key", keyA], timeout: 120)
        #expect(again.ok && again.stdout.contains("Re-sealed 0 entries and 0 chunks"), "\(again)")
        // The removed device cannot rekey: it opens none of the re-sealed records.
        let byB = ModelProcess.run([binary, "rekey", container, "--device-key", keyB], timeout: 60)
        #expect(!byB.ok && byB.stderr.contains("no key of epoch 1"), "\(byB)")

        // A's mount, again, and a fresh mount of the same device that downloads everything.
        try a.remount()
        #expect(try readText(a.path("Reports/q3.txt")) == "written before the removal", "\(a.daemonLog())")
        #expect(try readFile(a.path("large.bin")) == large, "\(a.daemonLog())")
        let fresh = try TestFolder.make(
            .mount, sharedContainer: container, mountArguments: ["--upload-delay", "20", "--device-key", keyA])
        defer { fresh.tearDown() }
        #expect(
            waitUntil(timeout: 30) { try readFile(fresh.path("large.bin")) == large }, "\(fresh.daemonLog())")
        #expect(try readText(fresh.path("Reports/q3.txt")) == "written before the removal")
        try fresh.unmount()
        try a.unmount()
    }

    @Test func rekeyRefusesAPlainContainer() throws {
        try TestFolder.with(.plain) { folder in
            let binary = try TestFolder.binaryPath()
            let made = ModelProcess.run([binary, "init", folder.containerPath], timeout: 60)
            #expect(made.ok, "\(made)")
            let keys = try TemporaryDirectory()
            let refused = ModelProcess.run(
                [binary, "rekey", folder.containerPath, "--device-key", keys.path + "/device-key"], timeout: 60)
            #expect(refused.status == 65, "\(refused)")
            #expect(refused.stderr.contains("not an encrypted container"), "\(refused)")
        }
    }
}
