import PostgresNIO

/// Schema step 7: accounts, roles, scoped tokens, share links and the audit log
/// (`PostgresAccessTables`; doc/FORMATS.md "PostgreSQL schema"). Times are Unix seconds; secrets
/// only as SHA-256 digests (64 hex digits) or password hashes.
///
/// - `syncfs_tokens` gains its user, device, role, expiry, last use and a sorted list of
///   containers. A row from before this step is a legacy token: no user, role `editor`, its one
///   `container` as the one-element list, no expiry. `container` stays, always the list's first.
/// - `syncfs_users`, `syncfs_devices`, `syncfs_members` (a user's role per container),
///   `syncfs_enrolments` (one-time login codes), `syncfs_failures` (failed attempts by key, shared
///   by every server process), `syncfs_links` (share links) and `syncfs_audit` (append-only,
///   pruned by age).
///
/// Names are not foreign keys: users are disabled, never deleted, and a token or a link may name
/// a container that does not exist yet (as the legacy tokens always could).
enum PostgresAccessSchema {
    static let migration: [PostgresQuery] = [
        """
        ALTER TABLE syncfs_tokens
            ADD COLUMN containers text[],
            ADD COLUMN user_name text,
            ADD COLUMN device_id text CHECK (device_id ~ '^[0-9a-f]{8}$'),
            ADD COLUMN role text NOT NULL DEFAULT 'editor' CHECK (role IN ('viewer', 'editor', 'admin')),
            ADD COLUMN expires bigint,
            ADD COLUMN last_used bigint,
            ADD COLUMN last_address text
        """,
        "UPDATE syncfs_tokens SET containers = ARRAY[container]",
        """
        ALTER TABLE syncfs_tokens ALTER COLUMN containers SET NOT NULL,
            ADD CONSTRAINT syncfs_tokens_containers CHECK (
                cardinality(containers) >= 1 AND array_position(containers, NULL) IS NULL
                AND container = containers[1])
        """,
        """
        CREATE TABLE syncfs_users (
            name text PRIMARY KEY CHECK (name ~ '^[a-z0-9._@-]{1,64}$'),
            password_hash text,
            totp_secret text,
            totp_last_step bigint,
            created bigint NOT NULL,
            disabled bigint
        )
        """,
        """
        CREATE TABLE syncfs_devices (
            id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{8}$'),
            user_name text NOT NULL,
            name text NOT NULL,
            created bigint NOT NULL,
            revoked bigint
        )
        """,
        "CREATE INDEX syncfs_devices_by_user ON syncfs_devices (user_name, created)",
        """
        CREATE TABLE syncfs_members (
            user_name text NOT NULL,
            container text NOT NULL,
            role text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
            PRIMARY KEY (user_name, container)
        )
        """,
        "CREATE INDEX syncfs_members_by_container ON syncfs_members (container, user_name)",
        """
        CREATE TABLE syncfs_enrolments (
            digest text PRIMARY KEY CHECK (digest ~ '^[0-9a-f]{64}$'),
            user_name text NOT NULL,
            expires bigint NOT NULL
        )
        """,
        "CREATE INDEX syncfs_enrolments_by_expiry ON syncfs_enrolments (expires)",
        """
        CREATE TABLE syncfs_failures (
            key text NOT NULL,
            time bigint NOT NULL
        )
        """,
        "CREATE INDEX syncfs_failures_by_key ON syncfs_failures (key, time)",
        "CREATE INDEX syncfs_failures_by_time ON syncfs_failures (time)",
        """
        CREATE TABLE syncfs_links (
            id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{8}$'),
            digest text NOT NULL UNIQUE CHECK (digest ~ '^[0-9a-f]{64}$'),
            container text NOT NULL,
            prefix text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('view', 'download', 'upload-only')),
            password_hash text,
            created bigint NOT NULL,
            expires bigint,
            max_downloads bigint CHECK (max_downloads >= 0),
            downloads bigint NOT NULL DEFAULT 0
                CHECK (downloads >= 0 AND (max_downloads IS NULL OR downloads <= max_downloads)),
            revoked bigint,
            created_by text NOT NULL,
            label text NOT NULL
        )
        """,
        "CREATE INDEX syncfs_links_by_container ON syncfs_links (container, created)",
        """
        CREATE TABLE syncfs_audit (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            time bigint NOT NULL,
            container text,
            actor text NOT NULL,
            address text,
            action text NOT NULL,
            target text NOT NULL,
            result text NOT NULL
        )
        """,
        "CREATE INDEX syncfs_audit_by_container ON syncfs_audit (container, time, seq)",
        "CREATE INDEX syncfs_audit_by_time ON syncfs_audit (time, seq)",
    ]

    /// Schema step 8: the web page's signed-in browsers (`syncfs_web_sessions`), with only the
    /// digest of each cookie's secret.
    static let webSessions: [PostgresQuery] = [
        """
        CREATE TABLE syncfs_web_sessions (
            id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{8}$'),
            digest text NOT NULL UNIQUE CHECK (digest ~ '^[0-9a-f]{64}$'),
            user_name text NOT NULL,
            created bigint NOT NULL,
            last_seen bigint NOT NULL,
            expires bigint NOT NULL,
            revoked bigint,
            address text,
            agent text NOT NULL
        )
        """,
        "CREATE INDEX syncfs_web_sessions_by_user ON syncfs_web_sessions (user_name, created)",
    ]
}
