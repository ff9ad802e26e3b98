import CSQLite

/// A look into a database this process does not own (another daemon's state, `syncfs-mount list`).
///
/// Opened `SQLITE_OPEN_READONLY`: nothing is created (a missing file is an error), nothing is
/// written, no write lock is ever taken, and a busy database is given up on after `busyTimeout`
/// milliseconds instead of waiting. Symlinks in `path` are followed (SQLite's NOFOLLOW would also
/// refuse the `/proc/self/fd/N` directory a careful caller pins): the caller checks what the
/// path leads to.
package enum SQLiteReadOnly {
    /// Runs `sql` and returns every row, each column as text (nil for NULL).
    ///
    /// `immutable`: SQLite's `immutable=1` — no lock at all and no `-wal`/`-shm` file opened or
    /// created, so the directory is left exactly as it was; only right when no process writes
    /// the database and its `-wal` is absent or empty (a cleanly closed database), since the
    /// content of a `-wal` would be ignored. Otherwise a plain read-only connection, which reads
    /// the `-wal` and may create or update the `-shm` index beside it (never the database).
    package static func query(
        _ path: String, _ sql: String, immutable: Bool = false, busyTimeout: Int32 = 250
    ) throws(SQLiteError) -> [[String?]] {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        let rc = sqlite3_open_v2(uri(path, immutable: immutable), &handle, flags, nil)
        defer { if let handle { sqlite3_close_v2(handle) } }
        guard rc == SQLITE_OK, let handle else {
            throw SQLiteError(code: rc, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open")
        }
        sqlite3_busy_timeout(handle, busyTimeout)
        var statement: OpaquePointer?
        let prepared = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard prepared == SQLITE_OK, let statement else {
            throw SQLiteError(code: prepared, message: String(cString: sqlite3_errmsg(handle)))
        }
        var rows: [[String?]] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else {
                throw SQLiteError(code: step, message: String(cString: sqlite3_errmsg(handle)))
            }
            rows.append(
                (0..<sqlite3_column_count(statement)).map { column in
                    sqlite3_column_text(statement, column).map { String(cString: $0) }
                })
        }
        return rows
    }

    /// `path` as a `file:` URI (`%`, `?` and `#` escaped).
    private static func uri(_ path: String, immutable: Bool) -> String {
        var escaped = ""
        for character in path {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3f"
            case "#": escaped += "%23"
            default: escaped.append(character)
            }
        }
        return "file:" + escaped + (immutable ? "?immutable=1" : "?mode=ro")
    }
}
