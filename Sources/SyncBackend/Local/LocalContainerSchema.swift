import SQLiteSupport

/// The schema of `container.db`, as an append-only list of migrations.
///
/// Invariant: a migration, once released, is never edited; a schema change is a new entry.
/// `PRAGMA user_version` records how many have been applied. Several processes may open the
/// container at once, so each step re-reads `user_version` inside its own `BEGIN IMMEDIATE`
/// transaction and applies only what nobody applied yet.
enum LocalContainerSchema {
    static let migrations: [String] = [
        // 1: entries (one row per entry: its newest version, live or tombstone) and the counter.
        """
        CREATE TABLE counters (
            name TEXT PRIMARY KEY NOT NULL,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO counters (name, value) VALUES ('version', 0);  -- the latest version handed out
        CREATE TABLE entries (
            id TEXT NOT NULL UNIQUE,            -- FileID, 32 hex digits
            version INTEGER NOT NULL UNIQUE,    -- the commit that made this row; orders the feed
            deleted INTEGER NOT NULL,           -- 1 for a tombstone (its columns: the last state)
            device TEXT NOT NULL,               -- who committed this version
            parent TEXT,                        -- FileID of the parent; NULL only for the root
            name BLOB NOT NULL,                 -- raw name bytes; empty only for the root
            kind INTEGER NOT NULL,              -- NodeKind: 1 file, 2 directory, 3 symlink
            mode INTEGER NOT NULL,              -- permission bits (0o7777)
            mtime INTEGER NOT NULL,             -- nanoseconds since the epoch
            size INTEGER NOT NULL,
            xattrs BLOB,                        -- LocalEntryEncoding; NULL when none
            symlink_target BLOB,                -- symlinks only
            manifest BLOB                       -- LocalEntryEncoding; NULL when empty
        );
        -- A backstop for the name check the commit makes: live names are unique per directory.
        CREATE UNIQUE INDEX entries_live_names ON entries (parent, name) WHERE deleted = 0;
        """
    ]

    /// Brings the database up to date. Throws `unsupportedFormat` (via the caller) when the
    /// database is newer than this build.
    static func migrate(_ connection: SQLiteConnection) throws {
        // The usual case, without taking the write lock: already up to date.
        if try connection.userVersion == migrations.count { return }
        while true {
            let done = try connection.transaction { () throws -> Bool in
                let applied = try connection.userVersion
                guard applied <= migrations.count else { throw NewerSchema(found: applied) }
                guard applied < migrations.count else { return true }
                try connection.execute(migrations[applied])
                try connection.execute("PRAGMA user_version = \(applied + 1)")
                return false
            }
            if done { return }
        }
    }

    /// The database was made by a newer SyncFS.
    struct NewerSchema: Error {
        let found: Int
    }
}
