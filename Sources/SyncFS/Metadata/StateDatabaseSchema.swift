import SQLiteSupport

/// The state database's schema, as an append-only list of migrations applied by the shared
/// runner (`SQLiteMigrations`: `PRAGMA user_version` counts the applied ones, each step in its own
/// transaction, a newer database refused). doc/FORMATS.md, "`state.db`", lists them.
///
/// Invariant: a migration, once released, is never edited; a schema change is a new entry.
enum StateDatabaseSchema {
    static let migrations = SQLiteMigrations([
        // 1: entries, extended attributes, key/value facts about this state directory.
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY NOT NULL,
            value TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE entries (
            ino INTEGER PRIMARY KEY NOT NULL,   -- local inode number, stable for the entry's life
            file_id TEXT NOT NULL UNIQUE,       -- stable identity (32 hex digits)
            parent_ino INTEGER,                 -- NULL only for the root
            name BLOB NOT NULL,                 -- raw name bytes
            kind INTEGER NOT NULL,              -- 1 file, 2 directory, 3 symlink
            mode INTEGER NOT NULL,              -- permission bits incl. setuid/setgid/sticky
            uid INTEGER NOT NULL,
            gid INTEGER NOT NULL,
            size INTEGER NOT NULL,
            atime_ns INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            ctime_ns INTEGER NOT NULL,
            symlink_target BLOB
        );
        CREATE INDEX entries_by_parent ON entries(parent_ino, name);
        CREATE TABLE xattrs (
            ino INTEGER NOT NULL,
            name TEXT NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY (ino, name)
        ) WITHOUT ROWID;
        """,
        // 2: the sync engine — what this copy last agreed with the container, and the outbox.
        """
        CREATE TABLE sync_base (
            file_id TEXT PRIMARY KEY NOT NULL,  -- the entry's stable identity
            version INTEGER NOT NULL,           -- the container version the local copy reflects
            manifest BLOB NOT NULL              -- that version's chunks: 32-byte hash + 8-byte LE length each
        ) WITHOUT ROWID;
        CREATE TABLE outbox (
            file_id TEXT PRIMARY KEY NOT NULL,  -- one row per entry with local changes not yet committed
            seq INTEGER NOT NULL,               -- order of the entry's first pending change
            generation INTEGER NOT NULL,        -- bumped by every later change
            attempts INTEGER NOT NULL,          -- failed upload attempts since the last success
            last_error TEXT                     -- why the last attempt failed
        ) WITHOUT ROWID;
        """,
        // 3: placeholders and pins — local state of each entry's content, never synced.
        """
        ALTER TABLE entries ADD COLUMN placeholder INTEGER NOT NULL DEFAULT 0; -- 1: content not on this device
        ALTER TABLE entries ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;      -- 1: kept downloaded (covers a directory's subtree)
        """,
        // 4: merges — the base version's entry state (name, parent, mode, mtime, xattrs, target;
        // `BaseStateEncoding`), read when a commit conflicts to tell which side changed what.
        // NULL: unknown (rows from before; treated as "both sides changed it").
        """
        ALTER TABLE sync_base ADD COLUMN state BLOB;
        """,
    ])
}
