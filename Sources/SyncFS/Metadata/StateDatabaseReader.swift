import Glibc
import SQLiteSupport

/// What a state directory holds, read without opening it for writing (`SQLiteReadOnly`): no
/// lock a live daemon needs is taken, nothing is created or changed.
public struct StateDatabaseSummary: Sendable, Equatable {
    /// Its `meta` table (doc/FORMATS.md, "`state.db`"), typed.
    var facts: StateFacts
    /// Changes queued for upload (rows of the `outbox`).
    public var queued: Int

    /// The recorded value; an empty one (a fact cleared) reads as absent.
    public func fact<Value>(_ fact: StateFact<Value>) -> Value? { facts[fact] }
}

public enum StateDatabaseReader {
    /// The summary of the database at `databasePath`, or nil if it is missing, not a SyncFS
    /// state database, or busy.
    ///
    /// A cleanly closed database (no `-wal`, or an empty one) is read `immutable`: nothing beside
    /// it is created or touched. One a killed daemon left with a `-wal` is read through a plain
    /// read-only connection, so the changes in the `-wal` count; SQLite may then update the
    /// `-shm` index next to it (never the database or the `-wal`).
    public static func summary(databasePath: String) -> StateDatabaseSummary? {
        var wal = stat()
        let immutable = stat(databasePath + "-wal", &wal) != 0 || wal.st_size == 0
        guard
            let facts = try? SQLiteReadOnly.query(databasePath, "SELECT key, value FROM meta", immutable: immutable),
            let count = try? SQLiteReadOnly.query(
                databasePath, "SELECT COUNT(*) FROM outbox", immutable: immutable
            ).first?.first,
            let queued = count.flatMap({ Int($0) })
        else { return nil }
        var recorded: [String: String] = [:]
        for row in facts where row.count == 2 {
            if let key = row[0], let value = row[1] { recorded[key] = value }
        }
        return StateDatabaseSummary(facts: StateFacts(recorded), queued: queued)
    }

    /// Whether SQLite finds the database at `databasePath` damaged (a header it cannot read, or
    /// pages its quick integrity check rejects). False for a missing, busy or intact database.
    /// Read-only, as `summary`.
    static func isDamaged(databasePath: String) -> Bool {
        var info = stat()
        guard stat(databasePath, &info) == 0, info.st_size > 0 else { return false }
        do {
            let rows = try SQLiteReadOnly.query(databasePath, "PRAGMA quick_check(1)")
            return rows.first?.first != "ok"
        } catch {
            return error.isDamage
        }
    }
}
