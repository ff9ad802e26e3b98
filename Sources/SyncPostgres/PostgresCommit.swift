import Logging
import PostgresNIO
import SyncBackend

/// One commit, inside the transaction `PostgresContainer.commit` opened.
///
/// Why `SELECT … FOR UPDATE` on the container row rather than `SERIALIZABLE`: every commit of a
/// container first locks that one row, so commits of all processes on the container run one
/// after another, and under READ COMMITTED each later statement of the transaction sees every
/// commit that finished before the lock was granted. The rules are then decided on a consistent
/// view and the next version is the counter + 1, without gaps or reuse. `SERIALIZABLE` would give
/// the same answers but report collisions as serialization failures to be retried (more round
/// trips, and a commit could fail under load for no reason a client can act on); the row lock
/// just makes the second commit wait and then see the first (which answers it
/// `versionConflict`). Commits of different containers never wait for each other.
///
/// `CommitRules` is synchronous, so the lookups it may make are read first, under the lock, into
/// a `CommitSnapshot`: the entry, its parent's chain of ancestors (one recursive query), the live
/// entry holding the new name, whether the entry has live children, and which manifest chunks are
/// held. The shared rules then decide, in the shared order, and an `.apply` writes the counter, the
/// row and `NOTIFY syncfs_changes` (delivered by PostgreSQL only when the transaction commits).
enum PostgresCommit {
    static func commit(
        _ request: CommitRequest, container rowID: Int64, on connection: PostgresConnection, logger: Logger
    ) async throws -> CommitOutcome {
        func query(_ query: PostgresQuery) async throws -> PostgresRowSequence {
            try await connection.query(query, logger: logger)
        }
        let locked = try await query("SELECT version FROM syncfs_containers WHERE id = \(rowID) FOR UPDATE")
        var counter: Int64?
        for try await version in locked.decode(Int64.self) { counter = version }
        guard let counter else {
            throw ContainerProtocolError.unavailable("the container is no longer in the database")
        }

        var snapshot = CommitSnapshot()
        let current = try await entries(
            query(
                "SELECT \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries WHERE container = \(rowID) AND file_id = \(request.id.hex)"
            )
        ).first
        snapshot.record(current, for: request.id)
        if let current, !current.isDeleted, current.state.kind == .directory {
            let rows = try await query(
                """
                SELECT EXISTS (SELECT 1 FROM syncfs_entries
                    WHERE container = \(rowID) AND parent = \(request.id.hex) AND NOT deleted)
                """)
            for try await exists in rows.decode(Bool.self) { snapshot.liveChildren[request.id] = exists }
        }
        if case .put(let state) = request.change {
            if let parent = state.parent {
                try await snapshot.recordAncestors(of: parent, container: rowID, query: query)
                let holder = try await entries(
                    query(
                        """
                        SELECT \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
                        WHERE container = \(rowID) AND parent = \(parent.hex)
                            AND name = \(ByteBuffer(bytes: state.name)) AND NOT deleted LIMIT 1
                        """)
                ).first
                snapshot.namedChild = (parent, state.name, holder)
            }
            let hashes = Array(Set(state.manifest.map(\.hash)))
            if !hashes.isEmpty {
                snapshot.heldChunks = try await PostgresContainer.heldChunks(hashes, container: rowID, query: query)
            }
        }

        switch try CommitRules.decide(request, in: snapshot) {
        case .refuse(let outcome):
            return outcome
        case .apply(let isDeleted, let state):
            let version = counter + 1
            let entry = RemoteEntry(
                id: request.id, version: EntryVersion(version), isDeleted: isDeleted, device: request.device,
                state: state)
            // Drain the answer: the statement has run once its one row has come back.
            for try await _ in try await query(PostgresEntryRow.apply(entry, container: rowID)) {}
            return .committed(entry)
        }
    }

    private static func entries(_ rows: PostgresRowSequence) async throws -> [RemoteEntry] {
        try await PostgresEntryRow.entries(rows)
    }
}

/// What `CommitRules` may ask during one commit, read beforehand under the container's lock. A
/// question that was not read beforehand is a bug here, reported as a storage failure rather than
/// answered wrongly.
struct CommitSnapshot: CommitLookup {
    var stored: [FileID: RemoteEntry] = [:]
    var absent: Set<FileID> = []
    var liveChildren: [FileID: Bool] = [:]
    var namedChild: (parent: FileID, name: [UInt8], holder: RemoteEntry?)?
    var heldChunks: Set<ChunkHash> = []

    mutating func record(_ entry: RemoteEntry?, for id: FileID) {
        if let entry { stored[id] = entry } else { absent.insert(id) }
    }

    /// Reads `start` and its ancestors (parent links, stopping at a missing entry or a repeat).
    mutating func recordAncestors(
        of start: FileID, container rowID: Int64, query: (PostgresQuery) async throws -> PostgresRowSequence
    ) async throws {
        let rows = try await query(
            """
            WITH RECURSIVE chain (file_id) AS (
                SELECT \(start.hex)::text
                UNION
                SELECT e.parent FROM chain c JOIN syncfs_entries e ON e.container = \(rowID) AND e.file_id = c.file_id
                WHERE e.parent IS NOT NULL
            )
            SELECT \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
            WHERE container = \(rowID) AND file_id IN (SELECT file_id FROM chain)
            """)
        for entry in try await PostgresEntryRow.entries(rows) { stored[entry.id] = entry }
        // The walk ends at the first ID without a row (the implicit root, or a dangling parent).
        var next: FileID? = start
        var seen = Set<FileID>()
        while let id = next, seen.insert(id).inserted {
            guard let entry = stored[id] else {
                absent.insert(id)
                return
            }
            next = entry.state.parent
        }
    }

    func storedEntry(_ id: FileID) throws(ContainerProtocolError) -> RemoteEntry? {
        if let entry = stored[id] { return entry }
        if absent.contains(id) { return nil }
        throw .storageFailure("commit: entry \(id) was not read before deciding")
    }

    func liveChild(of parent: FileID, named name: [UInt8]) throws(ContainerProtocolError) -> RemoteEntry? {
        guard let namedChild, namedChild.parent == parent, namedChild.name == name else {
            throw .storageFailure("commit: the children of \(parent) were not read before deciding")
        }
        return namedChild.holder
    }

    func hasLiveChildren(_ directory: FileID) throws(ContainerProtocolError) -> Bool {
        guard let answer = liveChildren[directory] else {
            throw .storageFailure("commit: the children of \(directory) were not read before deciding")
        }
        return answer
    }

    func missingChunks(_ hashes: [ChunkHash]) throws(ContainerProtocolError) -> [ChunkHash] {
        hashes.filter { !heldChunks.contains($0) }
    }
}
