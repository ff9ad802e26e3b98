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
        """,
        // 2: accounts (`AccessStore`). Existing tokens become legacy editor tokens: no user, their
        // one container in `token_containers`, no expiry.
        """
        ALTER TABLE tokens ADD COLUMN user TEXT;          -- NULL: a legacy token
        ALTER TABLE tokens ADD COLUMN device TEXT;
        ALTER TABLE tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'editor'
            CHECK (role IN ('viewer', 'editor', 'admin'));
        ALTER TABLE tokens ADD COLUMN expires INTEGER;    -- NULL: never (service and legacy tokens)
        ALTER TABLE tokens ADD COLUMN last_used INTEGER;
        ALTER TABLE tokens ADD COLUMN last_address TEXT;
        CREATE TABLE token_containers (
            token TEXT NOT NULL,                -- tokens.id
            container TEXT NOT NULL,
            PRIMARY KEY (token, container)
        ) WITHOUT ROWID;
        INSERT INTO token_containers (token, container) SELECT id, container FROM tokens;
        CREATE TABLE users (
            name TEXT PRIMARY KEY NOT NULL,
            password_hash TEXT,                 -- Argon2id encoding; NULL: enrolment codes only
            totp_secret TEXT,
            totp_last_step INTEGER,
            created INTEGER NOT NULL,
            disabled INTEGER
        ) WITHOUT ROWID;
        CREATE TABLE devices (
            id TEXT PRIMARY KEY NOT NULL,
            user TEXT NOT NULL,
            name TEXT NOT NULL,
            created INTEGER NOT NULL,
            revoked INTEGER
        ) WITHOUT ROWID;
        CREATE INDEX devices_by_user ON devices (user);
        CREATE TABLE memberships (
            user TEXT NOT NULL,
            container TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
            PRIMARY KEY (user, container)
        ) WITHOUT ROWID;
        CREATE INDEX memberships_by_container ON memberships (container);
        CREATE TABLE enrolments (
            digest TEXT PRIMARY KEY NOT NULL,   -- SHA-256 of the one-time code
            user TEXT NOT NULL,
            expires INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE failures (
            key TEXT NOT NULL,                  -- user:NAME, address:ADDR, link:ID
            time INTEGER NOT NULL
        );
        CREATE INDEX failures_by_key ON failures (key, time);
        CREATE TABLE links (
            id TEXT PRIMARY KEY NOT NULL,
            digest TEXT NOT NULL UNIQUE,        -- SHA-256 of the link's secret
            container TEXT NOT NULL,
            prefix TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('view', 'download', 'upload-only')),
            password_hash TEXT,
            created INTEGER NOT NULL,
            expires INTEGER,
            max_downloads INTEGER,
            downloads INTEGER NOT NULL DEFAULT 0,
            revoked INTEGER,
            created_by TEXT NOT NULL,
            label TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE audit (
            time INTEGER NOT NULL,
            container TEXT,                     -- NULL: a server-wide event
            actor TEXT NOT NULL,
            address TEXT,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            result TEXT NOT NULL
        );
        CREATE INDEX audit_by_time ON audit (time);
        CREATE INDEX audit_by_container ON audit (container, time);
        """,
        // 3: the web page's signed-in browsers (`WebSessionRecord`).
        """
        CREATE TABLE web_sessions (
            id TEXT PRIMARY KEY NOT NULL,
            digest TEXT NOT NULL UNIQUE,        -- SHA-256 of the cookie's secret
            user TEXT NOT NULL,
            created INTEGER NOT NULL,
            last_seen INTEGER NOT NULL,
            expires INTEGER NOT NULL,
            revoked INTEGER,
            address TEXT,
            agent TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX web_sessions_by_user ON web_sessions (user, created);
        """,
    ])
}
