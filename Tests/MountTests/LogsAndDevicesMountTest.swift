import Foundation
import Glibc
import TestSupport
import Testing

/// Logs people can read and conflict copies that name the mount (doc/SEMANTICS.md
/// "Logs" and "Device names").
@Suite(.serialized)
struct LogsAndDevicesMountTest {
    /// A mount whose server is away, with several changes queued and retried, logs a bounded
    /// number of lines however long the outage and however many retries (161 lines in two
    /// minutes before): one when it starts, summaries at most every few minutes, one when it ends.
    @Test func anOutageCostsABoundedNumberOfLogLines() throws {
        try SyncedMounts.with(uploadDelay: 0, overServer: true) { mounts in
            let server = try #require(mounts.server)
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("before.txt"), "online")
            for index in 1...8 { try writeFile(a.path("remote-\(index).txt"), "remote \(index)\n") }
            #expect(a.expectSync())
            // B knows the files as placeholders (not read yet).
            try #require(waitUntil(timeout: 30) { try listDirectory(b.root).count == 9 }, "\(mounts.logs())")
            server.stop()
            let logBefore = lines(a.logPath)
            let logBeforeB = lines(b.logPath)
            for index in 1...6 { try writeFile(a.path("queued-\(index).txt"), "offline \(index)\n") }
            try makeDirectory(a.path("dir"))
            try writeFile(a.path("dir/inner.txt"), "offline inner\n")
            // `sync` asks for retries at once, again and again: the count must not follow them.
            let deadline = Date().addingTimeInterval(25)
            var syncs = 0
            while Date() < deadline {
                _ = try? a.runSync(timeout: 2)
                syncs += 1
            }
            // B reads placeholders it cannot download, again and again (a file manager, a
            // script in a loop): one line per outage, not one per read (141 lines a minute before).
            var failedReads = 0
            for _ in 1...3 {
                for index in 1...8 where (try? readFile(b.path("remote-\(index).txt"))) == nil { failedReads += 1 }
            }
            let duringB = Array(lines(b.logPath).dropFirst(logBeforeB.count))
            #expect(failedReads == 24, "every read fails while the server is away")
            #expect(
                duringB.count <= 4,
                "\(duringB.count) lines for \(failedReads) failed reads:\n\(duringB.joined(separator: "\n"))")
            #expect(duringB.contains { $0.contains("cannot download remote-") }, "\(duringB.joined(separator: "\n"))")
            let during = Array(lines(a.logPath).dropFirst(logBefore.count))
            #expect(syncs >= 3)
            #expect(
                during.count <= 6,
                "\(during.count) lines in 25 s offline (\(syncs) syncs):\n\(during.joined(separator: "\n"))")
            #expect(
                during.contains { $0.contains("upload of queued-") || $0.contains("upload of dir") },
                "the first failure names the path: \(during.joined(separator: "\n"))")
            try server.restart()
            #expect(
                waitUntil(timeout: 30) { try a.syncStatus().pendingEntries == 0 },
                "the queue drains once the server is back\n\(mounts.logs())")
            let after = Array(lines(a.logPath).dropFirst(logBefore.count + during.count))
            #expect(
                after.contains { $0.contains("work again after") },
                "one line when it ends: \(after.joined(separator: "\n"))")
            #expect(try readText(b.path("remote-1.txt")) == "remote 1\n")
            #expect(
                waitUntil { b.daemonLog(limit: 200_000).contains("downloads work again after") }, "\(b.daemonLog())")
        }
    }

    /// `--log-level debug` shows a line per transfer, naming the file's path and its bytes.
    @Test func debugLoggingNamesThePathOfEveryUploadAndDownload() throws {
        try SyncedMounts.with(
            uploadDelay: 20, argumentsA: ["--log-level", "debug"], argumentsB: ["--log-level", "debug"]
        ) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("docs"))
            let content = try randomBytes(300_000)
            try writeFile(a.path("docs/report.bin"), content)
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { try readFile(b.path("docs/report.bin")) == content }, "\(mounts.logs())")
            #expect(
                waitUntil { a.daemonLog(limit: 200_000).contains("uploaded docs/report.bin (") },
                "no debug line for the upload\n\(a.daemonLog())")
            let upload = a.daemonLog(limit: 200_000).split(separator: "\n").first {
                $0.contains("uploaded docs/report.bin (")
            }
            #expect(upload?.contains("300000 bytes") == true, "\(upload ?? "")")
            #expect(
                waitUntil { b.daemonLog(limit: 200_000).contains("downloaded docs/report.bin (") },
                "no debug line for the download\n\(b.daemonLog())")
            let download = b.daemonLog(limit: 200_000).split(separator: "\n").first {
                $0.contains("downloaded docs/report.bin (")
            }
            #expect(download?.contains("300000 bytes") == true, "\(download ?? "")")
        }
    }

    /// Two mounts of one container on one machine name their conflict copies after different
    /// devices (both were `from vm` before); `--device-name` sets the name.
    @Test func twoMountsOnOneMachineNameTheirConflictCopiesApart() throws {
        try SyncedMounts.with(
            uploadDelay: 600_000, argumentsA: ["--log-level", "debug"], argumentsB: ["--log-level", "debug"]
        ) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            // first.txt: A syncs first, B keeps its version as a copy; second.txt: the other way.
            for (name, first, second) in [("first", a, b), ("second", b, a)] {
                try writeFile(first.path("\(name).txt"), "base\n")
                try #require(first.expectSync())
                try #require(waitUntil { try readText(second.path("\(name).txt")) == "base\n" }, "\(mounts.logs())")
                try writeFile(first.path("\(name).txt"), "edited first\n")
                try writeFile(second.path("\(name).txt"), "edited second, longer\n")
                #expect(first.expectSync())
                #expect(second.expectSync())
            }
            #expect(waitUntil { try listDirectory(a.root).count == 4 }, "\(mounts.logs())")
            let names = try listDirectory(a.root)
            func device(of file: String) -> String? {
                guard let copy = names.first(where: { $0.hasPrefix("\(file) (conflict from ") }) else { return nil }
                // "first (conflict from DEVICE YYYY-MM-DD HHMMSS).txt"
                let rest = copy.dropFirst("\(file) (conflict from ".count)
                let parts = rest.split(separator: " ")
                return parts.count >= 3 ? parts.dropLast(2).joined(separator: " ") : nil
            }
            let fromB = try #require(device(of: "first"), "\(names)")
            let fromA = try #require(device(of: "second"), "\(names)")
            #expect(fromA != fromB, "\(names)")
            #expect(a.daemonLog(limit: 200_000).contains("as device '\(fromA)'"), "\(a.daemonLog())")
            #expect(b.daemonLog(limit: 200_000).contains("as device '\(fromB)'"), "\(b.daemonLog())")
            var buffer = [CChar](repeating: 0, count: 256)
            _ = gethostname(&buffer, buffer.count - 1)
            let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            #expect(fromA.hasPrefix(host), "the default starts with the host name \(host): \(fromA)")
            // The mount whose commit was refused merged, and says so at debug level.
            #expect(b.daemonLog(limit: 200_000).contains("merged the content of first.txt ("), "\(b.daemonLog())")

            // The name is kept across mounts, and --device-name replaces it.
            try a.unmount()
            try a.remount()
            #expect(a.daemonLog(limit: 200_000).components(separatedBy: "as device '\(fromA)'").count == 3)
        }
    }

    @Test func aHostileDeviceNameIsRefused() throws {
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        try makeDirectory(base + "/mnt")
        for name in ["a/b", "", "..", "line\nbreak", "\u{1b}[31mred", String(repeating: "x", count: 65)] {
            let result = ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "mount", base + "/container", base + "/mnt", "--state-dir",
                    base + "/state", "--device-name", name,
                ], timeout: 30)
            if TestFolder.isMounted(base + "/mnt") { TestFolder.lazyUnmount(base + "/mnt") }
            #expect(result.status == 64, "\(name.debugDescription): \(result)")
            #expect(result.stderr.contains("--device-name"), "\(result)")
        }
        #expect(!pathExists(base + "/container") && !pathExists(base + "/state"), "nothing was made")

        let named = try TestFolder.make(.mount, mountArguments: ["--device-name", "Büro PC"])
        defer { named.tearDown() }
        #expect(named.daemonLog().contains("as device 'Büro PC'"), "\(named.daemonLog())")
    }

    private func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}
