import PostgresNIO

/// Schema step 3: the commit's lookups and its checked write as functions in the database, so
/// that a commit is two statements and holds the container's lock only inside PostgreSQL
/// (`PostgresCommit`, doc/FORMATS.md "PostgreSQL schema"). PL/pgSQL rather than SQL functions:
/// PL/pgSQL keeps each query's plan for the session, where an SQL function's body is planned
/// again on every call (three times per commit).
///
/// - `syncfs_commit_lookup(container, id, parent, name, hashes)` answers everything the commit
///   rules may ask, as rows tagged by what they answer: 1 the entry, 2 the parent and its
///   ancestors, 3 the live entry holding `name` in `parent`, 4 whether the entry has a live child
///   (always one row), 5 the held chunks among `hashes`. Kinds 4 and 5 carry NULL entry columns.
/// - `syncfs_commit_fingerprint(…)` is the SHA-256 of those rows in a fixed order: equal
///   fingerprints mean the rules would see the same answers.
/// - `syncfs_commit_apply(…, fingerprint, entry…)` locks the container row (`FOR UPDATE`),
///   recomputes the fingerprint under the lock (PL/pgSQL takes a new snapshot per statement
///   under READ COMMITTED, so it sees every commit the lock waited for) and, only if it is
///   unchanged, writes the entry at the counter + 1, moves the counter and queues
///   `NOTIFY syncfs_changes`; it returns the new version, 0 when the answers changed (the caller
///   decides again), NULL when the container is gone.
enum PostgresCommitFunctions {
    static let migration: [PostgresQuery] = [
        """
        CREATE FUNCTION syncfs_commit_lookup(
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
                FROM syncfs_chunks c WHERE c.container = p_container AND c.hash = ANY (p_hashes);
        END
        $$
        """,
        """
        CREATE FUNCTION syncfs_commit_fingerprint(
            p_container bigint, p_id text, p_parent text, p_name bytea, p_hashes text[])
        RETURNS text LANGUAGE plpgsql STABLE AS $$
        BEGIN
            RETURN (SELECT encode(sha256(convert_to(string_agg(l::text, '|' ORDER BY l::text), 'UTF8')), 'hex')
                FROM syncfs_commit_lookup(p_container, p_id, p_parent, p_name, p_hashes) l);
        END
        $$
        """,
        """
        CREATE FUNCTION syncfs_commit_apply(
            p_container bigint, p_id text, p_parent text, p_name bytea, p_hashes text[], p_fingerprint text,
            p_deleted boolean, p_device text, p_new_parent text, p_new_name bytea, p_kind smallint,
            p_mode integer, p_mtime bigint, p_size bigint, p_xattrs bytea, p_symlink_target bytea,
            p_manifest bytea)
        RETURNS bigint LANGUAGE plpgsql AS $$
        DECLARE
            counter bigint;
        BEGIN
            SELECT c.version INTO counter FROM syncfs_containers c WHERE c.id = p_container FOR UPDATE;
            IF NOT FOUND THEN
                RETURN NULL;
            END IF;
            IF syncfs_commit_fingerprint(p_container, p_id, p_parent, p_name, p_hashes)
                    IS DISTINCT FROM p_fingerprint THEN
                RETURN 0;
            END IF;
            UPDATE syncfs_containers c SET version = counter + 1 WHERE c.id = p_container;
            INSERT INTO syncfs_entries AS e (container, file_id, version, deleted, device, parent, name, kind, mode,
                    mtime, size, xattrs, symlink_target, manifest)
                VALUES (p_container, p_id, counter + 1, p_deleted, p_device, p_new_parent, p_new_name, p_kind,
                    p_mode, p_mtime, p_size, p_xattrs, p_symlink_target, p_manifest)
                ON CONFLICT (container, file_id) DO UPDATE SET
                    version = excluded.version, deleted = excluded.deleted, device = excluded.device,
                    parent = excluded.parent, name = excluded.name, kind = excluded.kind, mode = excluded.mode,
                    mtime = excluded.mtime, size = excluded.size, xattrs = excluded.xattrs,
                    symlink_target = excluded.symlink_target, manifest = excluded.manifest;
            PERFORM pg_notify('syncfs_changes', p_container::text);
            RETURN counter + 1;
        END
        $$
        """,
    ]
}
