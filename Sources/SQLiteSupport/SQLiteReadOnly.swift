import CSQLite

/// A look into a database this process does not own (another daemon's state, `syncfs-mount list`).
///
/// Opened `SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW`: nothing is created (a missing file is an
/// error, as is a symlink in its place), nothing is written, no write lock is ever taken, and a
/// busy database is given up on after `busyTimeout` milliseconds instead of waiting.
package enum SQLiteReadOnly {
    /// Runs `sql` and returns every row, each column as text (nil for NULL).
    package static func query(_ path: String, _ sql: String, busyTimeout: Int32 = 250) throws(SQLiteError)
        -> [[String?]]
    {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
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
}
