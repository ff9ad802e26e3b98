import PostgresNIO
import SyncBackend

extension PostgresContainer: ImportableContainer {
    /// Writes `entries` as they are, in one transaction (`ImportableContainer`): one statement
    /// for all the rows (`PostgresBulkEntries`: each column as an array, `unnest`ed), then the
    /// counter raised to the newest version. The per-row statements this replaced made
    /// `container copy` of 1,000,000 entries take ~17 minutes (doc/performance-log.md).
    public func importEntries(_ entries: [RemoteEntry]) async throws(ContainerProtocolError) {
        guard !entries.isEmpty else { return }
        let rows = PostgresBulkEntries(entries)
        try await store.run("import entries") { [rowID, store] client in
            try await client.withTransaction(logger: store.options.logger) { connection in
                try await connection.query(rows.upsert(container: rowID), logger: store.options.logger)
                try await connection.query(
                    """
                    UPDATE syncfs_containers SET version = GREATEST(version, \(rows.newest)) WHERE id = \(rowID)
                    RETURNING pg_notify(\(PostgresStore.channel), \(String(rowID)))
                    """, logger: store.options.logger)
            }
        }
    }

    /// Renames this (staged) container to `name`, making it visible to clients under that name;
    /// `invalidRequest` if a container of that name exists.
    public func publish(as name: String) async throws(ContainerProtocolError) {
        try PostgresStore.checkName(name)
        let renamed = try await store.run("publish the container as \(name)") { [rowID] client in
            let rows = try await client.query(
                """
                UPDATE syncfs_containers SET name = \(name)
                WHERE id = \(rowID) AND NOT EXISTS (SELECT 1 FROM syncfs_containers WHERE name = \(name))
                RETURNING id
                """)
            for try await _ in rows.decode(Int64.self) { return true }
            return false
        }
        guard renamed else { throw .invalidRequest("a container named \(name) exists") }
    }
}

extension PostgresStore {
    /// The name of the container whose container ID is `id`, if the database holds one.
    public func containerName(withID id: String) async throws(ContainerProtocolError) -> String? {
        try await run("look up container ID \(id)") { client -> String? in
            let rows = try await client.query("SELECT name FROM syncfs_containers WHERE container_id = \(id)")
            for try await name in rows.decode(String.self) { return name }
            return nil
        }
    }

    /// Deletes the container named `name` and everything recorded for it (entries, versions,
    /// chunk rows), then sweeps the blobs no other container holds (`PostgresSweep`; a failure
    /// there leaves blobs behind, never a row without its blob). Only for a staged copy no
    /// client sees.
    public func dropStagedContainer(named name: String) async throws(ContainerProtocolError) {
        try Self.checkName(name)
        let held = try await run("drop the staged container \(name)") { client in
            let rows = try await client.query(
                """
                WITH gone AS (DELETE FROM syncfs_containers WHERE name = \(name) RETURNING id)
                SELECT c.hash FROM syncfs_chunks c JOIN gone ON c.container = gone.id
                """)
            return try await PostgresCollection.hashes(rows)
        }
        _ = try await PostgresSweep.sweep(held, store: self)
    }
}
