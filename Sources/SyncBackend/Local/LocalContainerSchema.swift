import SQLiteSupport

/// The schema of `container.db`, as an append-only list of migrations applied by the shared
/// runner (`SQLiteMigrations`). Several processes may open the container at once: each step
/// re-reads `user_version` inside its own `BEGIN IMMEDIATE` transaction and applies only what
/// nobody applied yet.
///
/// Invariant: a migration, once released, is never edited; a schema change is a new entry.
package enum LocalContainerSchema {
    package static let migrations = SQLiteMigrations([
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
        """,
        // 2: history. When each row was committed, tombstones purged out of the trash, every
        // superseded version (copied by the commit that replaces it, in its transaction), and the
        // container's settings (its retention policy, and since when it keeps history).
        """
        ALTER TABLE entries ADD COLUMN committed_at INTEGER NOT NULL DEFAULT 0;  -- ns since the epoch; 0 unknown
        ALTER TABLE entries ADD COLUMN purged INTEGER NOT NULL DEFAULT 0;        -- 1: a tombstone out of the trash
        CREATE INDEX entries_trash ON entries (version) WHERE deleted = 1 AND purged = 0;
        CREATE TABLE versions (
            id TEXT NOT NULL,
            version INTEGER NOT NULL UNIQUE,    -- the commit that made this version
            deleted INTEGER NOT NULL,
            device TEXT NOT NULL,
            parent TEXT,
            name BLOB NOT NULL,
            kind INTEGER NOT NULL,
            mode INTEGER NOT NULL,
            mtime INTEGER NOT NULL,
            size INTEGER NOT NULL,
            xattrs BLOB,
            symlink_target BLOB,
            manifest BLOB,
            committed_at INTEGER NOT NULL,      -- as in entries
            replaced_at INTEGER NOT NULL        -- ns since the epoch: when the next version was committed
        );
        CREATE INDEX versions_by_entry ON versions (id, version);
        CREATE TABLE settings (
            name TEXT PRIMARY KEY NOT NULL,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO settings (name, value) VALUES
            ('retention_days', 30), ('retention_versions', 0),
            ('history_since', CAST(strftime('%s', 'now') AS INTEGER) * 1000000000);
        """,
        // 3: cross-mount locks (`ContainerLocks`): one row per held lock, its lease to
        // `expires_at`; 64-bit unsigned values (owner, range) stored as their bit pattern.
        """
        CREATE TABLE locks (
            file_id TEXT NOT NULL,              -- FileID, 32 hex digits
            kind TEXT NOT NULL,                 -- 'flock' or 'posix'
            session TEXT NOT NULL,              -- the holding mount run, 32 hex digits
            owner INTEGER NOT NULL,             -- the kernel's lock owner in that mount
            range_start INTEGER NOT NULL,       -- first byte
            range_end INTEGER NOT NULL,         -- last byte, inclusive (-1: to the end of the file)
            mode TEXT NOT NULL,                 -- 'shared' or 'exclusive'
            holder TEXT NOT NULL,               -- the holder's device name, for display
            expires_at INTEGER NOT NULL,        -- ns since the epoch: the end of the lease
            PRIMARY KEY (file_id, kind, session, owner, range_start)
        ) WITHOUT ROWID;
        CREATE INDEX locks_by_session ON locks (session);
        """,
        // 4: lock leases by expiry, so that each lock call deletes every expired lease at the cost
        // of an index probe (the table stays within `LockLimits.maxLocksPerContainer` rows).
        "CREATE INDEX locks_by_expiry ON locks (expires_at);",
    ])
}
