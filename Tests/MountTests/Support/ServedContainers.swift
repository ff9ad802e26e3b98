import Foundation
import Testing

/// Which backend the `syncfs-mount serve` of a mount test runs on: the embedded default
/// (`--root DIR`: a directory per container) or PostgreSQL + S3 (`--database … --chunk-store
/// s3://…`, on the services of `scripts/services.sh`). Tests "through a server" run on both and
/// assert the same things on each.
enum MountServerBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case embedded
    case postgresS3

    var testDescription: String { rawValue }
}

/// What the server holds, looked at from the server's side (its disk, or its database) as an
/// administrator would: the equivalent checks on either backend.
extension ServerProcess {
    /// Whether the server holds a container named `name` (a directory with its marker, or a row
    /// of `syncfs_containers`).
    func holdsContainer(_ name: String) throws -> Bool {
        guard let database else { return pathExists(root + "/" + name + "/syncfs-container.json") }
        return try database.value("SELECT count(*) FROM syncfs_containers WHERE name = '\(try Self.checked(name))'")
            == "1"
    }

    /// The entries the container `name` holds (tombstones too unless `liveOnly`), read straight
    /// from the store (also while the server is stopped or dead).
    func entryCount(_ name: String, liveOnly: Bool) throws -> Int {
        guard let database else {
            let result = ModelProcess.run(
                [
                    "/usr/bin/sqlite3", root + "/" + name + "/container.db",
                    "SELECT count(*) FROM entries" + (liveOnly ? " WHERE deleted = 0" : ""),
                ], timeout: 30)
            guard result.ok, let count = Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw TestFolderError(message: "sqlite3 failed: \(result)")
            }
            return count
        }
        let text = try database.value(
            "SELECT count(*) FROM syncfs_entries e JOIN syncfs_containers c ON c.id = e.container "
                + "WHERE c.name = '\(try Self.checked(name))'" + (liveOnly ? " AND NOT e.deleted" : ""))
        guard let count = Int(text) else { throw TestFolderError(message: "psql printed \(text)") }
        return count
    }

    /// Removes the container `name` behind the server's back (its directory, or its row and so
    /// its entries); its tokens stay, as an administrator's `rm -r` or `DELETE` would leave them.
    func removeContainer(_ name: String) throws {
        guard let database else {
            try FileManager.default.removeItem(atPath: root + "/" + name)
            return
        }
        _ = try database.value("DELETE FROM syncfs_containers WHERE name = '\(try Self.checked(name))' RETURNING 1")
    }

    /// `name` if it is a plain container name (spliced into SQL: tests' own names only).
    private static func checked(_ name: String) throws -> String {
        guard !name.isEmpty,
            name.utf8.allSatisfy({ $0 == 0x2D || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) })
        else { throw TestFolderError(message: "not a plain container name: \(name)") }
        return name
    }
}
