import PostgresNIO

/// Schema step 4: version history, retention and safe garbage collection
/// (doc/FORMATS.md "PostgreSQL schema", doc/SEMANTICS.md "Garbage collection").
///
/// - `syncfs_entries` gains `committed_at` (nanoseconds since the epoch by the database's clock,
///   `syncfs_now_ns()`; 0 for rows written before this step) and `purged` (a tombstone whose
///   content retention no longer keeps: out of the trash, its manifest no longer references).
/// - `syncfs_versions` holds every superseded version, copied from `syncfs_entries` by the
///   commit that replaces it, in the same statement (`syncfs_commit_apply`,
///   `PostgresEntryRow.apply`), with the time it was replaced.
/// - `syncfs_containers` gains the container's `RetentionPolicy` (30 days by default).
/// - `syncfs_chunks` gains `stored_at` (last `putChunk`), `stored_length` (encoded bytes) and
///   `state`: 0 pending (claimed by a `putChunk` whose blob may not be stored yet), 1 live (the
///   blob is stored: the only state commits and reads count), 2 being deleted (a collection
///   chose it; the store-wide sweep removes it, and the blob if no container holds it).
/// - `syncfs_sweeps` records the hashes whose blob a sweep is deleting: a `putChunk` of such a
///   hash is refused `unavailable` until the sweep is done.
/// - `syncfs_commit_lookup` counts only live chunks (tag 5), `syncfs_commit_apply` copies the
///   replaced row into `syncfs_versions` and stamps `committed_at`.
enum PostgresHistorySchema {
    static let migration: [PostgresQuery] = [
        """
        ALTER TABLE syncfs_entries ADD COLUMN committed_at bigint NOT NULL DEFAULT 0,
            ADD COLUMN purged boolean NOT NULL DEFAULT false
        """,
        // A tombstone from before history has no time: its retention counts from the upgrade
        // (as the local container's `history_since`), so upgrading never empties the trash.
        "ALTER TABLE syncfs_containers ADD COLUMN history_since bigint NOT NULL DEFAULT 0",
        "UPDATE syncfs_containers SET history_since = (extract(epoch FROM clock_timestamp()) * 1e9)::bigint",
        """
        CREATE TABLE syncfs_versions (
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
            committed_at bigint NOT NULL,
            replaced_at bigint NOT NULL,
            PRIMARY KEY (container, file_id, version)
        )
        """,
        "CREATE INDEX syncfs_versions_by_version ON syncfs_versions (container, version)",
        "CREATE INDEX syncfs_entries_trash ON syncfs_entries (container, version) WHERE deleted AND NOT purged",
        """
        ALTER TABLE syncfs_containers
            ADD COLUMN retention_days integer NOT NULL DEFAULT 30 CHECK (retention_days BETWEEN 0 AND 36500),
            ADD COLUMN retention_versions integer NOT NULL DEFAULT 0
                CHECK (retention_versions BETWEEN 0 AND 100000)
        """,
        """
        ALTER TABLE syncfs_chunks ADD COLUMN stored_at bigint NOT NULL DEFAULT 0,
            ADD COLUMN stored_length bigint NOT NULL DEFAULT 0 CHECK (stored_length >= 0),
            ADD COLUMN state smallint NOT NULL DEFAULT 1 CHECK (state IN (0, 1, 2))
        """,
        "CREATE INDEX syncfs_chunks_by_hash ON syncfs_chunks (hash)",
        """
        CREATE TABLE syncfs_sweeps (
            hash text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
            started_at bigint NOT NULL,
            sweeper bigint NOT NULL
        )
        """,
        """
        CREATE FUNCTION syncfs_now_ns() RETURNS bigint LANGUAGE sql VOLATILE AS $$
            SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint
        $$
        """,
        // The advisory lock key of a chunk hash: its first 64 bits.
        """
        CREATE FUNCTION syncfs_hash_key(p_hash text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
            SELECT ('x' || substr(p_hash, 1, 16))::bit(64)::bigint
        $$
        """,
        // `putChunk`'s claim (`PostgresChunkClaim`): under the hash's advisory lock, -1 while a
        // sweep deletes the blob (a record younger than `p_takeover` ns; an older one is taken
        // over), else the container's row upserted and its state answered (0 pending, 1 live).
        """
        CREATE FUNCTION syncfs_chunk_claim(
            p_container bigint, p_hash text, p_plain bigint, p_encoding smallint, p_length bigint, p_takeover bigint)
        RETURNS smallint LANGUAGE plpgsql AS $$
        DECLARE
            started bigint;
            stamp bigint;
            result smallint;
        BEGIN
            PERFORM pg_advisory_xact_lock(syncfs_hash_key(p_hash));
            stamp := syncfs_now_ns();
            SELECT s.started_at INTO started FROM syncfs_sweeps s WHERE s.hash = p_hash;
            IF FOUND THEN
                IF stamp - started < p_takeover THEN
                    RETURN -1;
                END IF;
                DELETE FROM syncfs_sweeps s WHERE s.hash = p_hash;
            END IF;
            INSERT INTO syncfs_chunks AS c (container, hash, plain_length, encoding, stored_at, stored_length, state)
                VALUES (p_container, p_hash, p_plain, p_encoding, stamp, p_length, 0)
                ON CONFLICT (container, hash) DO UPDATE SET
                    stored_at = excluded.stored_at,
                    state = CASE WHEN c.state = 1 THEN 1 ELSE 0 END,
                    plain_length = CASE WHEN c.state = 1 THEN c.plain_length ELSE excluded.plain_length END,
                    encoding = CASE WHEN c.state = 1 THEN c.encoding ELSE excluded.encoding END,
                    stored_length = CASE WHEN c.state = 1 THEN c.stored_length ELSE excluded.stored_length END
                RETURNING c.state INTO result;
            RETURN result;
        END
        $$
        """,
        """
        CREATE OR REPLACE FUNCTION syncfs_commit_lookup(
            p_container bigint, p_id text, p_parent text, p_name bytea, p_hashes text[])
        RETURNS TABLE (tag integer, hash text, flag boolean, file_id text, version bigint, deleted boolean,
            device text, parent text, name bytea, kind smallint, mode integer, mtime bigint, size bigint,
            xattrs bytea, symlink_target bytea, manifest bytea)
        LANGUAGE plpgsql STABLE AS $$
        #variable_conflict use_column
        BEGIN
            RETURN QUERY WITH RECURSIVE chain (id) AS (
                SELECT p_parent
                UNION
                SELECT e.parent FROM chain c
                    JOIN syncfs_entries e ON e.container = p_container AND e.file_id = c.id
                WHERE e.parent IS NOT NULL
            )
            SELECT 1, NULL::text, NULL::boolean, e.file_id, e.version, e.deleted, e.device, e.parent, e.name,
                    e.kind, e.mode, e.mtime, e.size, e.xattrs, e.symlink_target, e.manifest
                FROM syncfs_entries e WHERE e.container = p_container AND e.file_id = p_id
            UNION ALL
            SELECT 2, NULL, NULL, e.file_id, e.version, e.deleted, e.device, e.parent, e.name,
                    e.kind, e.mode, e.mtime, e.size, e.xattrs, e.symlink_target, e.manifest
                FROM syncfs_entries e WHERE e.container = p_container AND e.file_id IN (SELECT id FROM chain)
            UNION ALL
            (SELECT 3, NULL, NULL, e.file_id, e.version, e.deleted, e.device, e.parent, e.name,
                    e.kind, e.mode, e.mtime, e.size, e.xattrs, e.symlink_target, e.manifest
                FROM syncfs_entries e
                WHERE e.container = p_container AND e.parent = p_parent AND e.name = p_name AND NOT e.deleted
                LIMIT 1)
            UNION ALL
            SELECT 4, NULL, EXISTS (SELECT 1 FROM syncfs_entries e
                    WHERE e.container = p_container AND e.parent = p_id AND NOT e.deleted),
                NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
            UNION ALL
            SELECT 5, c.hash, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
                FROM syncfs_chunks c WHERE c.container = p_container AND c.hash = ANY (p_hashes) AND c.state = 1;
        END
        $$
        """,
        """
        CREATE OR REPLACE FUNCTION syncfs_commit_apply(
            p_container bigint, p_id text, p_parent text, p_name bytea, p_hashes text[], p_fingerprint text,
            p_deleted boolean, p_device text, p_new_parent text, p_new_name bytea, p_kind smallint,
            p_mode integer, p_mtime bigint, p_size bigint, p_xattrs bytea, p_symlink_target bytea,
            p_manifest bytea)
        RETURNS bigint LANGUAGE plpgsql AS $$
        DECLARE
            counter bigint;
            stamp bigint;
        BEGIN
            SELECT c.version INTO counter FROM syncfs_containers c WHERE c.id = p_container FOR UPDATE;
            IF NOT FOUND THEN
                RETURN NULL;
            END IF;
            IF syncfs_commit_fingerprint(p_container, p_id, p_parent, p_name, p_hashes)
                    IS DISTINCT FROM p_fingerprint THEN
                RETURN 0;
            END IF;
            stamp := syncfs_now_ns();
            UPDATE syncfs_containers c SET version = counter + 1 WHERE c.id = p_container;
            INSERT INTO syncfs_versions (container, file_id, version, deleted, device, parent, name, kind, mode,
                    mtime, size, xattrs, symlink_target, manifest, committed_at, replaced_at)
                SELECT e.container, e.file_id, e.version, e.deleted, e.device, e.parent, e.name, e.kind, e.mode,
                    e.mtime, e.size, e.xattrs, e.symlink_target, e.manifest, e.committed_at, stamp
                FROM syncfs_entries e WHERE e.container = p_container AND e.file_id = p_id AND NOT e.purged
                ON CONFLICT DO NOTHING;
            INSERT INTO syncfs_entries AS e (container, file_id, version, deleted, device, parent, name, kind, mode,
                    mtime, size, xattrs, symlink_target, manifest, committed_at, purged)
                VALUES (p_container, p_id, counter + 1, p_deleted, p_device, p_new_parent, p_new_name, p_kind,
                    p_mode, p_mtime, p_size, p_xattrs, p_symlink_target, p_manifest, stamp, false)
                ON CONFLICT (container, file_id) DO UPDATE SET
                    version = excluded.version, deleted = excluded.deleted, device = excluded.device,
                    parent = excluded.parent, name = excluded.name, kind = excluded.kind, mode = excluded.mode,
                    mtime = excluded.mtime, size = excluded.size, xattrs = excluded.xattrs,
                    symlink_target = excluded.symlink_target, manifest = excluded.manifest,
                    committed_at = excluded.committed_at, purged = false;
            PERFORM pg_notify('syncfs_changes', p_container::text);
            RETURN counter + 1;
        END
        $$
        """,
    ]
}
