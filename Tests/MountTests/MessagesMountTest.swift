import Foundation
import Glibc
import TestSupport
import Testing

/// Messages people can act on: TLS failures say what failed and what to do, with no
/// library internals; a token file others can read is a warning on the `mount` command's
/// standard error; `--lifeline` with standard input already at end-of-file is a usage error.
@Suite(.serialized)
struct MessagesMountTest {
    /// Text that must never reach a person: BoringSSL's error stack names build paths.
    static func leaksInternals(_ text: String) -> Bool {
        ["BoringSSL", "handshake.cc", ".build/", "/checkouts/", "NIOSSL", "OPENSSL_internal"].contains {
            text.contains($0)
        }
    }

    @Test func tlsFailuresSayWhatFailedAndSuggestTheFix() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(root: base + "/server", tls: true)
        defer { server.stop() }
        let certificate = try #require(server.tls?.certificate)
        let token = try server.createToken(container: "box")
        let mountpoint = base + "/mnt"
        try makeDirectory(mountpoint)
        func mount(_ url: String, state: String, _ extra: [String]) throws -> ModelProcessResult {
            let result = ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "mount", url, mountpoint, "--state-dir", base + "/" + state,
                    "--token-file", token,
                ] + extra, timeout: 60)
            return result
        }
        func unmount() {
            _ = ModelProcess.run([(try? TestFolder.binaryPath()) ?? "", "unmount", mountpoint], timeout: 60)
            if TestFolder.isMounted(mountpoint) { TestFolder.lazyUnmount(mountpoint) }
        }
        defer { unmount() }

        // Not trusted (self-signed, no --ca-file): refused at the first mount, suggesting --ca-file.
        let untrusted = try mount(server.url("box"), state: "state-untrusted", [])
        if TestFolder.isMounted(mountpoint) { unmount() }
        #expect(untrusted.status == 65, "\(untrusted)")
        #expect(untrusted.stderr.contains("not trusted") && untrusted.stderr.contains("--ca-file FILE"), "\(untrusted)")
        #expect(!Self.leaksInternals(untrusted.stderr), "\(untrusted)")
        #expect(untrusted.stderr.split(separator: "\n").count == 1, "one line: \(untrusted)")

        // A later mount of a state directory that synced once starts offline, and its log says why.
        let first = try mount(server.url("box"), state: "state", ["--ca-file", certificate])
        #expect(first.ok, "\(first)")
        unmount()
        let later = try mount(server.url("box"), state: "state", [])
        #expect(later.ok, "a later mount starts offline: \(later)")
        let log = TestFolder.tail(of: base + "/state/syncfs.log", limit: 20_000)
        #expect(log.contains("is not trusted") && log.contains("--ca-file FILE"), "\(log)")
        #expect(!Self.leaksInternals(log), "\(log)")
        unmount()

        // A CA file that is not a certificate says so.
        let garbage = base + "/garbage.pem"
        try writeFile(garbage, "not a certificate\n")
        let unreadable = try mount(server.url("box"), state: "state-garbage", ["--ca-file", garbage])
        if TestFolder.isMounted(mountpoint) { unmount() }
        #expect(unreadable.status == 65, "\(unreadable)")
        #expect(unreadable.stderr.contains("holds no PEM certificate"), "\(unreadable)")
        #expect(!Self.leaksInternals(unreadable.stderr), "\(unreadable)")
    }

    @Test func aCertificateForAnotherHostNameSaysToCheckTheHostName() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(root: base + "/server", tls: true, certificateNames: "DNS:other.example")
        defer { server.stop() }
        let token = try server.createToken(container: "box")
        try makeDirectory(base + "/mnt")
        let result = ModelProcess.run(
            [
                try TestFolder.binaryPath(), "mount", server.url("box"), base + "/mnt", "--state-dir", base + "/state",
                "--token-file", token, "--ca-file", try #require(server.tls?.certificate),
            ], timeout: 60)
        if TestFolder.isMounted(base + "/mnt") {
            _ = ModelProcess.run([try TestFolder.binaryPath(), "unmount", base + "/mnt"], timeout: 60)
            if TestFolder.isMounted(base + "/mnt") { TestFolder.lazyUnmount(base + "/mnt") }
        }
        #expect(result.status == 65, "\(result)")
        #expect(result.stderr.contains("not issued for the host name '127.0.0.1'"), "\(result)")
        #expect(result.stderr.contains("check the host name"), "\(result)")
        #expect(!Self.leaksInternals(result.stderr), "\(result)")
    }

    @Test func aTokenFileOthersCanReadIsAWarningOnStandardError() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(root: base + "/server")
        defer { server.stop() }
        let token = try server.createToken(container: "box")
        try makeDirectory(base + "/mnt")
        let mount = [
            try TestFolder.binaryPath(), "mount", server.url("box"), base + "/mnt", "--state-dir", base + "/state",
            "--token-file", token,
        ]
        let unmount = [try TestFolder.binaryPath(), "unmount", base + "/mnt"]
        defer { if TestFolder.isMounted(base + "/mnt") { TestFolder.lazyUnmount(base + "/mnt") } }

        let onlyMine = ModelProcess.run(mount, timeout: 60)
        #expect(onlyMine.ok, "\(onlyMine)")
        #expect(!onlyMine.stderr.contains("can be read by others"), "a 0600 token file is fine: \(onlyMine)")
        #expect(ModelProcess.run(unmount, timeout: 60).ok)

        try posix("chmod") { chmod(token, 0o644) }
        let readable = ModelProcess.run(mount, timeout: 60)
        #expect(readable.ok, "\(readable)")
        #expect(
            readable.stderr.contains("syncfs-mount: warning: the token file ")
                && readable.stderr.contains("token-box-test can be read by others (mode 644); chmod 600 it"),
            "\(readable)")
        #expect(ModelProcess.run(unmount, timeout: 60).ok)
        let log = TestFolder.tail(of: base + "/state/syncfs.log", limit: 20_000)
        #expect(log.contains("can be read by others"), "the log keeps it too: \(log)")
    }

    /// `mount --foreground --lifeline` with standard input at end-of-file (/dev/null, systemd's
    /// default) is a usage error before anything is mounted (it mounted, printed `ready` and
    /// unmounted at once before).
    @Test func mountLifelineWithStandardInputAtEndOfFileIsAUsageError() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        try makeDirectory(base + "/mnt")
        let result = ModelProcess.run(
            [
                try TestFolder.binaryPath(), "mount", base + "/container", base + "/mnt", "--state-dir",
                base + "/state", "--foreground", "--lifeline",
            ], stdinPath: "/dev/null", timeout: 30)
        if TestFolder.isMounted(base + "/mnt") { TestFolder.lazyUnmount(base + "/mnt") }
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("standard input is already at end-of-file"), "\(result)")
        #expect(!result.stdout.contains("ready"), "\(result)")
        #expect(!pathExists(base + "/state"), "nothing is started")
    }
}
