import Foundation
import Glibc
import TestSupport
import Testing

/// Version history and the trash through real mounts (doc/SEMANTICS.md "Version history and the
/// trash"): `versions`, `trash` and `restore` on mount A of a container two mounts
/// share — the embedded container, a server of embedded containers, and a server on
/// PostgreSQL + S3 — and what B sees of each restore.
@Suite(.serialized)
struct HistoryMountTest {
    enum Route: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case localContainer, embeddedServer, postgresServer
        var testDescription: String { rawValue }
    }

    struct Listing: Decodable {
        struct Version: Decodable {
            var version: UInt64
            var committedAt: Int64
            var size: Int64
            var change: String
            var current: Bool
            var device: String
            var deviceName: String?
        }

        var fileID: String
        var versions: [Version]
    }

    struct TrashItem: Decodable {
        var fileID: String
        var path: String?
        var kind: String
        var entries: Int
        var bytes: Int64
        var deviceName: String?
    }

    private func with(_ route: Route, _ body: (SyncedMounts) throws -> Void) throws {
        switch route {
        case .localContainer: try SyncedMounts.with(body)
        case .embeddedServer: try SyncedMounts.with(overServer: true, backend: .embedded, body)
        case .postgresServer: try SyncedMounts.with(overServer: true, backend: .postgresS3, body)
        }
    }

    private func cli(_ arguments: [String]) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath()] + arguments, timeout: 120)
    }

    private func decoded<T: Decodable>(_ type: T.Type, _ result: ModelProcessResult) throws -> T {
        guard result.ok else { throw TestFolderError(message: "\(result)") }
        return try JSONDecoder().decode(T.self, from: Data(result.stdout.utf8))
    }

    @Test(arguments: Route.allCases) func anOverwrittenFileComesBackOnEveryMachineAndHistoryIsKept(route: Route) throws
    {
        try with(route) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("report.txt"), "first draft")
            #expect(a.expectSync())
            try writeFile(a.path("report.txt"), "second draft, longer")
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { try readText(b.path("report.txt")) == "second draft, longer" })

            let before = try decoded(Listing.self, try cli(["versions", a.path("report.txt"), "--json"]))
            #expect(before.versions.count == 2, "\(before)")
            #expect(before.versions.first?.current == true && before.versions.first?.size == 20)
            #expect(before.versions.first?.change == "modified")
            #expect(before.versions.allSatisfy { $0.committedAt > 0 && !$0.device.isEmpty })
            let firstDraft = try #require(before.versions.last)
            #expect(firstDraft.size == 11 && !firstDraft.current)
            let human = try cli(["versions", a.path("report.txt")])
            #expect(human.ok && human.stdout.contains("(current)") && human.stdout.contains("\(firstDraft.version)\t"))
            // A's own versions carry its name; B knows only the device's ID.
            #expect(before.versions.allSatisfy { $0.deviceName?.isEmpty == false }, "\(before)")
            #expect(human.stdout.contains(" (this device)\t"), "\(human)")
            let fromB = try decoded(Listing.self, try cli(["versions", b.path("report.txt"), "--json"]))
            #expect(fromB.versions.allSatisfy { $0.deviceName == nil }, "\(fromB)")
            let humanB = try cli(["versions", b.path("report.txt")])
            #expect(humanB.stdout.contains("\tdevice \(firstDraft.device)\t"), "\(humanB)")

            let restore = try cli(["restore", a.path("report.txt"), "--version", String(firstDraft.version)])
            #expect(restore.ok, "\(restore)\n\(a.daemonLog())")
            #expect(restore.stdout.contains("restored report.txt"))
            // `restore` returns once the folder shows it.
            #expect(try readText(a.path("report.txt")) == "first draft")
            #expect(
                waitUntil(timeout: 30) { try readText(b.path("report.txt")) == "first draft" },
                "B gets the restore\n\(mounts.logs())")

            // The restore is a new version: the one it replaced is still there to go back to.
            let after = try decoded(Listing.self, try cli(["versions", a.path("report.txt"), "--json"]))
            #expect(after.fileID == before.fileID)
            #expect(after.versions.count == 3, "\(after)")
            #expect(after.versions.first?.size == 11)
            #expect(after.versions.map(\.version).dropFirst() == before.versions.map(\.version)[...])

            // --to makes a copy of a version; the original stays as it is.
            let second = before.versions[0].version
            let copy = try cli([
                "restore", a.path("report.txt"), "--version", String(second), "--to", a.path("copy.txt"),
            ])
            #expect(copy.ok, "\(copy)")
            #expect(try readText(a.path("copy.txt")) == "second draft, longer")
            #expect(try readText(a.path("report.txt")) == "first draft")
            #expect(waitUntil(timeout: 30) { try readText(b.path("copy.txt")) == "second draft, longer" })

            // Already current: nothing to do, said so.
            let again = try cli(["restore", a.path("report.txt"), "--version", String(after.versions[0].version)])
            #expect(again.status == 65 && again.stderr.contains("already the current version"), "\(again)")
        }
    }

    @Test(arguments: Route.allCases) func aDeletedFolderComesBackWithWhatWasDeletedWithIt(route: Route) throws {
        try with(route) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try makeDirectory(a.path("project"))
            try makeDirectory(a.path("project/src"))
            try writeFile(a.path("project/README"), "read me")
            try writeFile(a.path("project/src/main.c"), "int main(void) { return 0; }")
            try writeFile(a.path("lone.txt"), "alone")
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { access(b.path("project/src/main.c"), F_OK) == 0 })

            #expect(ModelProcess.run(["/bin/rm", "-rf", a.path("project")], timeout: 60).ok)
            try posix("unlink") { unlink(a.path("lone.txt")) }
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { access(b.path("project"), F_OK) != 0 }, "\(mounts.logs())")

            let trash = try decoded([TrashItem].self, try cli(["trash", a.root, "--json"]))
            let folder = try #require(trash.first { $0.path == "project" }, "\(trash)")
            #expect(folder.kind == "directory" && folder.entries == 4 && folder.bytes == 7 + 28)
            #expect(folder.deviceName?.isEmpty == false, "A's own deletion carries its name")
            #expect(trash.contains { $0.path == "lone.txt" && $0.kind == "file" })
            #expect(!trash.contains { $0.path == "project/README" }, "deleted with the folder: part of it")

            let restore = try cli(["restore", a.path("project")])
            #expect(restore.ok, "\(restore)\n\(a.daemonLog())")
            #expect(try readText(a.path("project/src/main.c")) == "int main(void) { return 0; }")
            #expect(try readText(a.path("project/README")) == "read me")
            #expect(
                waitUntil(timeout: 30) { try readText(b.path("project/src/main.c")) == "int main(void) { return 0; }" },
                "B gets the folder back\n\(mounts.logs())")
            #expect(try readText(b.path("project/README")) == "read me")
            let left = try decoded([TrashItem].self, try cli(["trash", a.root, "--json"]))
            #expect(!left.contains { $0.path == "project" })

            // By file ID, to another name, when the old one is taken.
            let lone = try #require(left.first { $0.path == "lone.txt" })
            try writeFile(a.path("lone.txt"), "a newer file")
            #expect(a.expectSync())
            let taken = try cli(["restore", "--id", lone.fileID, a.root])
            #expect(taken.status == 65 && taken.stderr.contains("taken"), "\(taken)")
            let elsewhere = try cli(["restore", "--id", lone.fileID, a.root, "--to", a.path("lone-old.txt")])
            #expect(elsewhere.ok, "\(elsewhere)")
            #expect(try readText(a.path("lone-old.txt")) == "alone")
            #expect(try readText(a.path("lone.txt")) == "a newer file")
            #expect(waitUntil(timeout: 30) { try readText(b.path("lone-old.txt")) == "alone" })
        }
    }

    @Test func badRequestsGetClearErrors() throws {
        try SyncedMounts.with { mounts in
            let a = mounts.a
            try writeFile(a.path("f.txt"), "x")
            #expect(a.expectSync())
            let cases: [([String], String)] = [
                (["versions", a.path("missing.txt")], "no such file"),
                (["restore", a.path("f.txt")], "--version"),
                (["restore", a.path("f.txt"), "--version", "999999"], "not kept"),
                (["restore", a.path("nothing-here")], "nothing by that path in the trash"),
                (["restore", "--id", "not-hex", a.root], "32 hexadecimal digits"),
                (["restore", a.path("f.txt"), "--version", "1", "--to", "/tmp/outside.txt"], "is not in"),
                (["versions", "/tmp"], "not in a SyncFS mount"),
            ]
            for (arguments, message) in cases {
                let result = try cli(arguments)
                #expect(result.status == 65, "\(arguments): \(result)")
                #expect(result.stderr.contains(message), "\(arguments): \(result)")
            }
        }
    }
}
