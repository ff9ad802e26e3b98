import SQLiteSupport

/// The schema of `tokens.db`, as an append-only list of migrations (the same scheme as the local
/// container's: `PRAGMA user_version` counts the applied ones, each applied in its own
/// `BEGIN IMMEDIATE` transaction so that a server and a `token` command may open it at once).
///
/// Invariant: a migration, once released, is never edited; a schema change is a new entry.
enum TokenStoreSchema {
    static let migrations: [String] = [
        // 1: one row per token ever made; revoked ones stay (their ID is listed as revoked).
        """
        CREATE TABLE tokens (
            id TEXT PRIMARY KEY NOT NULL,       -- 8 hex digits, public: names the token in list/revoke
            digest TEXT NOT NULL UNIQUE,        -- SHA-256 of the token, 64 hex digits (the token is never stored)
            container TEXT NOT NULL,            -- the one container the token opens
            label TEXT NOT NULL,                -- free text for people
            created INTEGER NOT NULL,           -- Unix seconds
            revoked INTEGER                     -- Unix seconds; NULL while the token is valid
        ) WITHOUT ROWID;
        """
    ]

    /// Brings the database up to date; throws `NewerSchema` when it is newer than this build.
    static func migrate(_ connection: SQLiteConnection) throws {
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
