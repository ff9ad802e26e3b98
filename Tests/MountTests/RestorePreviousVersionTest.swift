import Foundation
import Glibc
import TestSupport
import Testing

/// `restore PATH --version previous` (doc/CLI.md `restore`): the version before the current one,
/// without looking its number up first.
@Suite
struct RestorePreviousVersionTest {
    private func cli(_ arguments: [String]) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath()] + arguments, timeout: 120)
    }

    @Test func previousBringsBackTheVersionBeforeTheCurrentOne() throws {
        try SyncedMounts.with { mounts in
            let (a, b) = (mounts.a, mounts.b)
            for draft in ["one", "two", "three"] {
                try writeFile(a.path("report.txt"), draft)
                #expect(a.expectSync())
            }
            let first = try cli(["restore", a.path("report.txt"), "--version", "previous"])
            #expect(first.ok && first.stdout.contains("restored report.txt"), "\(first)\n\(a.daemonLog())")
            #expect(try readText(a.path("report.txt")) == "two")
            #expect(waitUntil(timeout: 30) { try readText(b.path("report.txt")) == "two" }, "\(mounts.logs())")
            // The restore is the current version now: the one before it is "three".
            let second = try cli(["restore", a.path("report.txt"), "--version", "previous"])
            #expect(second.ok, "\(second)")
            #expect(try readText(a.path("report.txt")) == "three")

            // A file with one version has nothing before it.
            try writeFile(a.path("solo.txt"), "only")
            #expect(a.expectSync())
            let solo = try cli(["restore", a.path("solo.txt"), "--version", "previous"])
            #expect(solo.status == 65 && solo.stderr.contains("no version before the current one"), "\(solo)")
            #expect(try readText(a.path("solo.txt")) == "only")

            // A deleted file: the version before the deletion, its last state.
            try writeFile(a.path("gone.txt"), "bye")
            #expect(a.expectSync())
            try posix("unlink") { unlink(a.path("gone.txt")) }
            #expect(a.expectSync())
            let deleted = try cli(["restore", a.path("gone.txt"), "--version", "previous"])
            #expect(deleted.ok && deleted.stdout.contains("restored gone.txt"), "\(deleted)")
            #expect(try readText(a.path("gone.txt")) == "bye")

            // Anything else than a number or `previous` is a usage error.
            let wrong = try cli(["restore", a.path("report.txt"), "--version", "latest"])
            #expect(wrong.status == 64, "\(wrong)")
        }
    }
}
