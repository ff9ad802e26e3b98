import SQLiteSupport

/// The schema of `tokens.db`, as an append-only list of migrations applied by the shared runner
/// (`SQLiteMigrations`: `PRAGMA user_version` counts the applied ones, each applied in its own
/// `BEGIN IMMEDIATE` transaction so that a server and a `token` command may open it at once).
///
/// Invariant: a migration, once released, is never edited; a schema change is a new entry.
package enum TokenStoreSchema {
    package static let migrations = SQLiteMigrations([
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
    ])
}
