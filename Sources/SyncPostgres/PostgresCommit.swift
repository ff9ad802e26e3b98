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
/// a `CommitSnapshot` by one statement (`CommitSnapshot.read`). The shared rules then decide, in
/// the shared order, and an `.apply` writes the counter, the row and `NOTIFY syncfs_changes`
/// (delivered by PostgreSQL only when the transaction commits) in one more statement. A commit is
/// thus five round trips — `BEGIN`, the lock, the lookups, the write, `COMMIT` — the last four
/// under the container's lock, which is what bounds a container's commit rate. The lock stays a
/// statement of its own: under READ COMMITTED a statement sees the data of its start, so lookups
/// made by the statement that waited for the lock would miss the commit it waited for.
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

        let snapshot = try await CommitSnapshot.read(for: request, container: rowID, query: query)

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

    /// Everything `CommitRules` may ask about `request`, read by one statement whose rows are
    /// tagged by what they answer:
    /// 1. the entry itself (no row: absent);
    /// 2. for a put with a parent, the parent and its ancestors (parent links, a recursive walk
    ///    that stops at a missing entry or a repeat);
    /// 3. for a put with a parent, the live entry holding the new name there (at most one);
    /// 4. whether the entry has a live child (one row, always: cheap, and asked of directories);
    /// 5. which of the manifest's chunks the container holds.
    /// Rows of kinds 4 and 5 carry typed NULLs where the others carry an entry.
    static func read(
        for request: CommitRequest, container rowID: Int64,
        query: (PostgresQuery) async throws -> PostgresRowSequence
    ) async throws -> CommitSnapshot {
        var parent: FileID?
        var name: ByteBuffer?
        var hashes: [String] = []
        if case .put(let state) = request.change {
            parent = state.parent
            name = parent == nil ? nil : ByteBuffer(bytes: state.name)
            hashes = Array(Set(state.manifest.map(\.hash.hex)))
        }
        let rows = try await query(
            """
            WITH RECURSIVE chain (file_id) AS (
                SELECT \(parent?.hex)::text
                UNION
                SELECT e.parent FROM chain c JOIN syncfs_entries e ON e.container = \(rowID) AND e.file_id = c.file_id
                WHERE e.parent IS NOT NULL
            )
            SELECT 1, NULL::text, NULL::boolean, \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
                WHERE container = \(rowID) AND file_id = \(request.id.hex)
            UNION ALL
            SELECT 2, NULL, NULL, \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
                WHERE container = \(rowID) AND file_id IN (SELECT file_id FROM chain)
            UNION ALL
            (SELECT 3, NULL, NULL, \(unescaped: PostgresEntryRow.columns) FROM syncfs_entries
                WHERE container = \(rowID) AND parent = \(parent?.hex) AND name = \(name) AND NOT deleted LIMIT 1)
            UNION ALL
            SELECT 4, NULL, EXISTS (SELECT 1 FROM syncfs_entries
                    WHERE container = \(rowID) AND parent = \(request.id.hex) AND NOT deleted),
                \(unescaped: PostgresEntryRow.nullColumns)
            UNION ALL
            SELECT 5, hash, NULL, \(unescaped: PostgresEntryRow.nullColumns) FROM syncfs_chunks
                WHERE container = \(rowID) AND hash = ANY(\(hashes))
            """)
        var snapshot = CommitSnapshot()
        var current: RemoteEntry?
        var holder: RemoteEntry?
        for try await row in rows {
            let cells = row.makeRandomAccess()
            switch try cells[0].decode(Int.self) {
            case 1: current = try PostgresEntryRow.entry(cells, at: 3)
            case 2:
                let ancestor = try PostgresEntryRow.entry(cells, at: 3)
                snapshot.stored[ancestor.id] = ancestor
            case 3: holder = try PostgresEntryRow.entry(cells, at: 3)
            case 4: snapshot.liveChildren[request.id] = try cells[2].decode(Bool.self)
            case 5:
                if let hash = ChunkHash(hex: try cells[1].decode(String.self)) { snapshot.heldChunks.insert(hash) }
            default: throw ContainerProtocolError.storageFailure("commit: the lookup answered an unknown row")
            }
        }
        snapshot.record(current, for: request.id)
        if let parent {
            snapshot.namedChild = (parent, name.map(PostgresEntryRow.bytes) ?? [], holder)
            snapshot.markChainEnd(from: parent)
        }
        return snapshot
    }

    /// Marks the first ID without a row on `start`'s parent chain as absent (the implicit root,
    /// or a dangling parent), as the recursive walk read it.
    private mutating func markChainEnd(from start: FileID) {
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
