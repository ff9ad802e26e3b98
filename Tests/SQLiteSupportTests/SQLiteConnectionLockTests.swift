import Foundation
import Glibc
import SQLiteSupport
import Testing

/// SQLite coordinates the processes sharing a WAL database with POSIX record locks, and a process
/// loses every such lock on a file when it closes *any* descriptor of that file. So opening a
/// second connection in a process must not open and close the database or its companions behind
/// SQLite's back: the first connection's locks would be gone, and another process (`container gc`
/// beside `serve`) could then take the database for its own (rebuild the WAL index, checkpoint
/// and delete the WAL) under the first connection's feet.
@Suite("SQLiteConnection: connections of one process keep each other's locks")
struct SQLiteConnectionLockTests {
    @Test func aSecondConnectionKeepsTheFirstConnectionsLocks() throws {
        let database = try ScratchDatabase()
        let first = try database.connection()
        try first.execute("PRAGMA journal_mode = WAL")
        try first.execute("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)")
        // A read makes SQLite hold its shared lock on the WAL index for the connection's life.
        let read = try first.statement("SELECT COUNT(*) FROM t")
        #expect(try read.step())
        read.reset()
        let held = try Self.locksOfThisProcess(on: database.path + "-shm")
        #expect(held > 0, "the first connection holds a lock on the WAL index")

        let second = try database.connection()
        _ = try second.userVersion

        #expect(try Self.locksOfThisProcess(on: database.path + "-shm") == held)
    }

    @Test func tighteningAPermissiveDatabaseKeepsTheLocksToo() throws {
        let database = try ScratchDatabase()
        let first = try database.connection()
        try first.execute("PRAGMA journal_mode = WAL")
        try first.execute("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)")
        let read = try first.statement("SELECT COUNT(*) FROM t")
        #expect(try read.step())
        read.reset()
        let held = try Self.locksOfThisProcess(on: database.path + "-shm")
        for file in [database.path, database.path + "-wal", database.path + "-shm"] {
            #expect(chmod(file, 0o644) == 0)
        }

        _ = try database.connection()

        #expect(try Self.locksOfThisProcess(on: database.path + "-shm") == held)
        var info = stat()
        #expect(stat(database.path + "-shm", &info) == 0 && info.st_mode & 0o077 == 0, "still made private")
    }

    /// The POSIX record locks this process holds on `path`'s inode, from `/proc/locks` (read
    /// without opening `path`, which would itself drop them).
    static func locksOfThisProcess(on path: String) throws -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        let inodeSuffix = ":\(info.st_ino)"
        let table = try String(contentsOfFile: "/proc/locks", encoding: .utf8)
        return table.split(separator: "\n").filter { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 5, fields[1] == "POSIX" || fields[1] == "OFDLCK" else { return false }
            return fields[4] == "\(getpid())" && fields[5].hasSuffix(inodeSuffix)
        }.count
    }
}
