import PostgresNIO

/// Schema step 5: cross-mount locks (`ContainerLocks`, `PostgresLocks`; doc/FORMATS.md
/// "PostgreSQL schema"). One row per held lock, as the local container's `locks` table (the same
/// columns and encodings: `LockRow`), its lease ending at `expires_at` (the database's clock,
/// `syncfs_now_ns()`). Rows outlive server restarts; expired ones are ignored, and deleted by the next claim.
enum PostgresLocksSchema {
    static let migration: [PostgresQuery] = [
        """
        CREATE TABLE syncfs_locks (
            container bigint NOT NULL REFERENCES syncfs_containers (id) ON DELETE CASCADE,
            file_id text NOT NULL CHECK (file_id ~ '^[0-9a-f]{32}$'),
            kind text NOT NULL CHECK (kind IN ('flock', 'posix')),
            session text NOT NULL CHECK (session ~ '^[0-9a-f]{32}$'),
            owner bigint NOT NULL,
            range_start bigint NOT NULL,
            range_end bigint NOT NULL,
            mode text NOT NULL CHECK (mode IN ('shared', 'exclusive')),
            holder text NOT NULL,
            expires_at bigint NOT NULL,
            PRIMARY KEY (container, file_id, kind, session, owner, range_start)
        )
        """,
        "CREATE INDEX syncfs_locks_by_session ON syncfs_locks (container, session)",
    ]

    /// Schema step 6: a container's leases by expiry, so that each lock call deletes every
    /// expired lease of the container at the cost of an index probe (the table stays within
    /// `LockLimits.maxLocksPerContainer` rows per container).
    static let expiryIndex: [PostgresQuery] = [
        "CREATE INDEX syncfs_locks_by_expiry ON syncfs_locks (container, expires_at)"
    ]
}
