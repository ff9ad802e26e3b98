import Logging
import PostgresNIO

/// The SyncFS schema in a PostgreSQL database and its migrations (doc/FORMATS.md, "PostgreSQL
/// schema").
///
/// - `syncfs_schema` holds one row: the schema version. Migration N takes the schema from version
///   N - 1 to N in one transaction that first takes a transaction-scoped advisory lock (so two
///   `server-init` runs at once apply each step once) and re-reads the version under it.
/// - Only `PostgresStore.initialize` migrates; opening a store only reads the version and refuses
///   a database without the schema, older (run the initialisation) or newer (upgrade SyncFS).
enum PostgresSchema {
    /// The version this code reads and writes.
    static let currentVersion = 8

    /// The advisory lock key every migration takes ("SyncFS" in ASCII).
    static let migrationLock: Int64 = 0x5379_6E63_4653

    /// Step N (index N - 1) brings the schema from version N - 1 to N.
    static let migrations: [[PostgresQuery]] = [
        [
            """
            CREATE TABLE syncfs_containers (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                name text NOT NULL UNIQUE,
                container_id text NOT NULL UNIQUE,
                version bigint NOT NULL DEFAULT 0 CHECK (version >= 0),
                created_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            """
            CREATE TABLE syncfs_entries (
                container bigint NOT NULL REFERENCES syncfs_containers (id) ON DELETE CASCADE,
                file_id text NOT NULL CHECK (file_id ~ '^[0-9a-f]{32}$'),
                version bigint NOT NULL CHECK (version > 0),
                deleted boolean NOT NULL,
                device text NOT NULL,
                parent text CHECK (parent ~ '^[0-9a-f]{32}$'),
                name bytea NOT NULL,
                kind smallint NOT NULL,
                mode integer NOT NULL,
                mtime bigint NOT NULL,
                size bigint NOT NULL,
                xattrs bytea,
                symlink_target bytea,
                manifest bytea,
                PRIMARY KEY (container, file_id),
                UNIQUE (container, version)
            )
            """,
            "CREATE INDEX syncfs_entries_live_children ON syncfs_entries (container, parent, name) WHERE NOT deleted",
            """
            CREATE TABLE syncfs_chunks (
                container bigint NOT NULL REFERENCES syncfs_containers (id) ON DELETE CASCADE,
                hash text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
                plain_length bigint NOT NULL CHECK (plain_length >= 0),
                encoding smallint NOT NULL,
                PRIMARY KEY (container, hash)
            )
            """,
        ],
        // 2: the access tokens, as the embedded token database keeps them (`TokenStore`): only
        // each token's SHA-256, one container per token, revoked tokens stay listed.
        [
            """
            CREATE TABLE syncfs_tokens (
                id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{8}$'),
                digest text NOT NULL UNIQUE CHECK (digest ~ '^[0-9a-f]{64}$'),
                container text NOT NULL,
                label text NOT NULL,
                created bigint NOT NULL,
                revoked bigint
            )
            """
        ],
        // 3: the commit's lookups and checked write as functions (`PostgresCommitFunctions`).
        PostgresCommitFunctions.migration,
        // 4: version history, retention and safe garbage collection (`PostgresHistorySchema`).
        PostgresHistorySchema.migration,
        // 5: cross-mount locks (`PostgresLocksSchema`).
        PostgresLocksSchema.migration,
        // 6: lock leases by expiry (`PostgresLocksSchema.expiryIndex`).
        PostgresLocksSchema.expiryIndex,
        // 7: accounts, roles, scoped tokens, share links and the audit log (`PostgresAccessSchema`).
        PostgresAccessSchema.migration,
        // 8: the web page's signed-in browsers (`PostgresAccessSchema.webSessions`).
        PostgresAccessSchema.webSessions,
    ]

    /// Creates or migrates the schema to `target` (tests make older schemas with it; the default
    /// is `currentVersion`); refuses one newer than `currentVersion`.
    static func migrate(_ client: PostgresClient, logger: Logger, upTo target: Int = currentVersion) async throws {
        while true {
            let done = try await client.withTransaction(logger: logger) { connection -> Bool in
                try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS syncfs_schema (
                        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                        version integer NOT NULL)
                    """, logger: logger)
                try await connection.query(
                    "INSERT INTO syncfs_schema (version) VALUES (0) ON CONFLICT DO NOTHING", logger: logger)
                let found = try await version(on: connection, logger: logger) ?? 0
                if found > currentVersion {
                    throw PostgresStoreError.schemaTooNew(found: found, supported: currentVersion)
                }
                if found >= target { return true }
                for statement in migrations[found] { try await connection.query(statement, logger: logger) }
                try await connection.query("UPDATE syncfs_schema SET version = \(found + 1)", logger: logger)
                logger.info("PostgreSQL schema migrated", metadata: ["version": "\(found + 1)"])
                return false
            }
            if done { return }
        }
    }

    /// Refuses a database whose schema is not `currentVersion`.
    static func check(_ client: PostgresClient, settings: PostgresSettings, logger: Logger) async throws {
        let found: Int?
        do {
            found = try await client.withConnection { connection in
                try await version(on: connection, logger: logger)
            }
        } catch  where PostgresFailure.sqlState(error) == "42P01" {
            throw PostgresStoreError.notInitialized("\(settings)")
        }
        guard let found, found > 0 else { throw PostgresStoreError.notInitialized("\(settings)") }
        if found > currentVersion { throw PostgresStoreError.schemaTooNew(found: found, supported: currentVersion) }
        if found < currentVersion { throw PostgresStoreError.schemaTooOld(found: found, supported: currentVersion) }
    }

    private static func version(on connection: PostgresConnection, logger: Logger) async throws -> Int? {
        let rows = try await connection.query("SELECT version FROM syncfs_schema", logger: logger)
        for try await version in rows.decode(Int.self) { return version }
        return nil
    }
}
