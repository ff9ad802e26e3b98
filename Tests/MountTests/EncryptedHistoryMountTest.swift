import Foundation
import Glibc
import TestSupport
import Testing

/// Version history, the trash and restore on an end-to-end encrypted container (doc/CRYPTO.md
/// "History"), through the built binary: `versions`, `trash` and `restore` on mount A of a sealed
/// container two mounts share — directly, through a server of embedded containers, and through a
/// server on PostgreSQL + S3 — show the plain names and sizes (decrypted), bring old content and
/// deleted files and folders back, and B sees each restore. The plain counterpart is `HistoryMountTest`.
@Suite(.serialized)
struct EncryptedHistoryMountTest {
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
        }

        var versions: [Version]
    }

    struct TrashItem: Decodable {
        var fileID: String
        var path: String?
        var kind: String
        var bytes: Int64
    }

    /// Two mounts of a new sealed container (A creates it, B opens it with the same device key).
    private func with(_ route: Route, _ body: (SyncedMounts) throws -> Void) throws {
        let keys = try TemporaryDirectory()
        let key = keys.path + "/device-key"
        let (a, b) = (["--create-encrypted", "--device-key", key], ["--encrypted", "--device-key", key])
        switch route {
        case .localContainer: try SyncedMounts.with(argumentsA: a, argumentsB: b, body)
        case .embeddedServer:
            try SyncedMounts.with(argumentsA: a, argumentsB: b, overServer: true, backend: .embedded, body)
        case .postgresServer:
            try SyncedMounts.with(argumentsA: a, argumentsB: b, overServer: true, backend: .postgresS3, body)
        }
    }

    private func cli(_ arguments: [String]) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath()] + arguments, timeout: 120)
    }

    private func decoded<T: Decodable>(_ type: T.Type, _ result: ModelProcessResult) throws -> T {
        guard result.ok else { throw TestFolderError(message: "\(result)") }
        return try JSONDecoder().decode(T.self, from: Data(result.stdout.utf8))
    }

    @Test(arguments: Route.allCases)
    func versionsRestoreAndTheTrashWorkOnAnEncryptedContainer(route: Route) throws {
        try with(route) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path("report.txt"), "first draft")
            #expect(a.expectSync())
            try writeFile(a.path("report.txt"), "second draft, longer")
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { try readText(b.path("report.txt")) == "second draft, longer" })

            // Both versions, with their plain sizes (the server's copies are sealed and padded).
            let before = try decoded(Listing.self, try cli(["versions", a.path("report.txt"), "--json"]))
            #expect(before.versions.map(\.size) == [20, 11], "\(before)\n\(a.daemonLog())")
            #expect(before.versions.map(\.current) == [true, false] && before.versions.first?.change == "modified")
            #expect(before.versions.allSatisfy { $0.committedAt > 0 })
            let firstDraft = try #require(before.versions.last)

            let restore = try cli(["restore", a.path("report.txt"), "--version", String(firstDraft.version)])
            #expect(restore.ok && restore.stdout.contains("restored report.txt"), "\(restore)\n\(a.daemonLog())")
            // `restore` returns once the mount shows it.
            #expect(try readText(a.path("report.txt")) == "first draft")
            #expect(
                waitUntil(timeout: 30) { try readText(b.path("report.txt")) == "first draft" },
                "B gets the restore\n\(mounts.logs())")
            let after = try decoded(Listing.self, try cli(["versions", b.path("report.txt"), "--json"]))
            #expect(after.versions.map(\.size) == [11, 20, 11], "\(after)")

            // The trash: a deleted file is listed by its name, and comes back.
            try writeFile(a.path("lone.txt"), "alone in the dark")
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { access(b.path("lone.txt"), F_OK) == 0 })
            try posix("unlink") { unlink(a.path("lone.txt")) }
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { access(b.path("lone.txt"), F_OK) != 0 }, "\(mounts.logs())")
            let trash = try decoded([TrashItem].self, try cli(["trash", a.root, "--json"]))
            let lone = try #require(trash.first { $0.path == "lone.txt" }, "\(trash)\n\(a.daemonLog())")
            #expect(lone.kind == "file" && lone.bytes == 17)

            let back = try cli(["restore", a.path("lone.txt")])
            #expect(back.ok, "\(back)\n\(a.daemonLog())")
            #expect(try readText(a.path("lone.txt")) == "alone in the dark")
            #expect(
                waitUntil(timeout: 30) { try readText(b.path("lone.txt")) == "alone in the dark" },
                "B gets the file back\n\(mounts.logs())")
            let left = try decoded([TrashItem].self, try cli(["trash", a.root, "--json"]))
            #expect(!left.contains { $0.fileID == lone.fileID }, "\(left)")

            // A deleted folder comes back with what was deleted with it.
            try makeDirectory(a.path("project"))
            try makeDirectory(a.path("project/src"))
            try writeFile(a.path("project/README"), "read me")
            try writeFile(a.path("project/src/main.c"), "int main(void) { return 0; }")
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { access(b.path("project/src/main.c"), F_OK) == 0 })
            #expect(ModelProcess.run(["/bin/rm", "-rf", a.path("project")], timeout: 60).ok)
            #expect(a.expectSync())
            #expect(waitUntil(timeout: 30) { access(b.path("project"), F_OK) != 0 }, "\(mounts.logs())")
            let withFolder = try decoded([TrashItem].self, try cli(["trash", a.root, "--json"]))
            let folder = try #require(withFolder.first { $0.path == "project" }, "\(withFolder)")
            #expect(folder.kind == "directory" && folder.bytes == 7 + 28)
            #expect(!withFolder.contains { $0.path == "project/README" }, "deleted with the folder: part of it")
            let folderBack = try cli(["restore", a.path("project")])
            #expect(folderBack.ok, "\(folderBack)\n\(a.daemonLog())")
            #expect(try readText(a.path("project/src/main.c")) == "int main(void) { return 0; }")
            #expect(
                waitUntil(timeout: 30) { try readText(b.path("project/README")) == "read me" },
                "B gets the folder back\n\(mounts.logs())")

            // Nothing the server showed raised an alarm.
            let status = try cli(["status", a.root])
            #expect(status.ok && status.stdout.contains("end-to-end encrypted") && !status.stdout.contains("ALARM"))
        }
    }
}
