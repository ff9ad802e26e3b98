/// A database's schema as an append-only list of steps, and the one runner that applies them
/// (the state database, `container.db` and `tokens.db` all use it; doc/FORMATS.md).
///
/// Invariants:
/// - A step, once released, is never edited; a schema change is a new step at the end. Step `n`
///   (1-based) brings the database from schema `n - 1` to schema `n`.
/// - `PRAGMA user_version` is the number of steps applied; 0 is an empty (new) database.
/// - Each step runs in its own `BEGIN IMMEDIATE` transaction that first re-reads `user_version`
///   under the write lock, so processes opening a database together apply every step exactly
///   once; a step that fails is rolled back whole and leaves `user_version` where it was.
/// - A database whose `user_version` is beyond the last step (made by a newer SyncFS) is refused
///   with `SQLiteSchemaTooNew` before anything is written.
package struct SQLiteMigrations: Sendable, CustomStringConvertible {
    /// The SQL of each step, in order; step `n` is `steps[n - 1]`.
    package let steps: [String]

    package init(_ steps: [String]) {
        self.steps = steps
    }

    /// The schema version this build writes: the number of steps.
    package var latestVersion: Int { steps.count }

    package var description: String { "\(steps.count) migration steps" }

    /// Brings the database of `connection` up to `latestVersion`.
    ///
    /// Throws `SQLiteSchemaTooNew` for a newer database, or the `SQLiteError` of a failing step
    /// (that step rolled back, the steps before it kept).
    package func migrate(_ connection: SQLiteConnection) throws {
        // The usual case, without taking the write lock: already up to date.
        let found = try connection.userVersion
        if found == latestVersion { return }
        guard found < latestVersion else { throw SQLiteSchemaTooNew(found: found, supported: latestVersion) }
        while try !applyNextStep(connection) {}
    }

    /// Applies the first step the database has not seen, in one transaction; true when none is left.
    private func applyNextStep(_ connection: SQLiteConnection) throws -> Bool {
        try connection.transaction { () throws -> Bool in
            let applied = try connection.userVersion
            guard applied <= latestVersion else { throw SQLiteSchemaTooNew(found: applied, supported: latestVersion) }
            guard applied < latestVersion else { return true }
            try connection.execute(steps[applied])
            try connection.execute("PRAGMA user_version = \(applied + 1)")
            return false
        }
    }
}

/// A database's schema is newer than this build's code (`user_version` beyond its last step):
/// a newer SyncFS wrote it, and this one refuses to guess what the extra steps changed.
package struct SQLiteSchemaTooNew: Error, Equatable, CustomStringConvertible, Sendable {
    /// The database's `user_version`.
    package let found: Int
    /// The newest schema this build knows.
    package let supported: Int

    package init(found: Int, supported: Int) {
        self.found = found
        self.supported = supported
    }

    package var description: String {
        "its schema is version \(found), newer than this build of SyncFS reads (\(supported)); upgrade SyncFS"
    }
}
