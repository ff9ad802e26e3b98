import PostgresNIO
import SyncBackend

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

    /// The snapshot in `rows` of `syncfs_commit_lookup(key…)` (cells 0 ..< 16: the tag, a chunk
    /// hash, a flag and an entry's columns, `PostgresCommitFunctions`); `extra` sees every row,
    /// for the cells a caller selected after those.
    static func read(
        _ rows: PostgresRowSequence, for key: CommitLookupKey,
        extra: (PostgresRandomAccessRow) throws -> Void
    ) async throws -> CommitSnapshot {
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
            case 4: snapshot.liveChildren[key.id] = try cells[2].decode(Bool.self)
            case 5:
                if let hash = ChunkHash(hex: try cells[1].decode(String.self)) { snapshot.heldChunks.insert(hash) }
            default: throw ContainerProtocolError.storageFailure("commit: the lookup answered an unknown row")
            }
            try extra(cells)
        }
        snapshot.record(current, for: key.id)
        if let parent = key.parent {
            snapshot.namedChild = (parent, key.name, holder)
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

/// The arguments of `syncfs_commit_lookup` for one request: the entry, and for a put with a
/// parent, that parent, the new name and the manifest's distinct chunk hashes.
struct CommitLookupKey {
    let container: Int64
    let id: FileID
    let parent: FileID?
    let name: [UInt8]
    let hashes: [String]

    init(_ request: CommitRequest, container: Int64) {
        self.container = container
        self.id = request.id
        if case .put(let state) = request.change {
            parent = state.parent
            name = state.parent == nil ? [] : state.name
            hashes = Array(Set(state.manifest.map(\.hash.hex)))
        } else {
            parent = nil
            name = []
            hashes = []
        }
    }

    private var nameBytes: ByteBuffer? { parent == nil ? nil : ByteBuffer(bytes: name) }

    /// The snapshot and its fingerprint (cell 16). Every value is a bound parameter.
    var lookupWithFingerprint: PostgresQuery {
        """
        SELECT l.*, f.fingerprint
        FROM syncfs_commit_lookup(\(container), \(id.hex), \(parent?.hex), \(nameBytes), \(hashes)) AS l
        CROSS JOIN syncfs_commit_fingerprint(\(container), \(id.hex), \(parent?.hex), \(nameBytes), \(hashes))
            AS f (fingerprint)
        """
    }

    /// The snapshot alone (for the locked transaction).
    var lookup: PostgresQuery {
        "SELECT * FROM syncfs_commit_lookup(\(container), \(id.hex), \(parent?.hex), \(nameBytes), \(hashes))"
    }

    /// `syncfs_commit_apply`: writes `state` if the snapshot still has `fingerprint`; answers
    /// the new version, 0 (changed) or NULL (no container).
    func apply(fingerprint: String?, isDeleted: Bool, device: String, state: EntryState) -> PostgresQuery {
        let xattrs = LocalEntryEncoding.encodeXattrs(state.xattrs).map { ByteBuffer(bytes: $0) }
        let target = state.symlinkTarget.map { ByteBuffer(bytes: $0) }
        let manifest = LocalEntryEncoding.encodeManifest(state.manifest).map { ByteBuffer(bytes: $0) }
        return """
            SELECT syncfs_commit_apply(\(container), \(id.hex), \(parent?.hex), \(nameBytes), \(hashes),
                \(fingerprint), \(isDeleted), \(device), \(state.parent?.hex), \(ByteBuffer(bytes: state.name)),
                \(Int16(state.kind.rawValue)), \(Int32(bitPattern: state.mode)), \(state.mtime), \(state.size),
                \(xattrs), \(target), \(manifest))
            """
    }
}
