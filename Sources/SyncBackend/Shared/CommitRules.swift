/// What a container's storage answers while a commit is being decided. Implementations read
/// within the commit's own transaction (or lock), so the answers cannot change meanwhile.
package protocol CommitLookup {
    /// The stored entry (live or tombstone), or nil. Not the implicit root: `CommitRules` adds it.
    func storedEntry(_ id: FileID) throws(ContainerProtocolError) -> RemoteEntry?
    /// A live entry named `name` in directory `parent`, if any.
    func liveChild(of parent: FileID, named name: [UInt8]) throws(ContainerProtocolError) -> RemoteEntry?
    /// Whether `directory` has at least one live child.
    func hasLiveChildren(_ directory: FileID) throws(ContainerProtocolError) -> Bool
    /// Which of `hashes` are not stored, in the order given.
    func missingChunks(_ hashes: [ChunkHash]) throws(ContainerProtocolError) -> [ChunkHash]
}

/// The commit rules of the `Container` contract, decided once for every implementation.
///
/// The checks run in the order the contract lists them, and the first that fails is the answer:
/// request shape (`invalidRequest`, thrown), base version, parent, name, cycle, empty directory,
/// chunks. A caller applies an `.apply` decision in the same transaction that made the lookups,
/// giving it the next container-wide version.
package enum CommitRules {
    package enum Decision: Equatable {
        /// Store this (live state or tombstone) at the next version.
        case apply(isDeleted: Bool, state: EntryState)
        /// Nothing changes; answer this.
        case refuse(CommitOutcome)
    }

    /// The root as it exists before its first commit: an empty directory at version 0.
    package static let implicitRoot = RemoteEntry(
        id: .root, version: 0, isDeleted: false, device: "",
        state: EntryState(parent: nil, name: [], kind: .directory, mode: 0o755, mtime: 0, size: 0))

    /// The entry as clients see it: the stored one, or for the root the implicit one.
    package static func entry(_ id: FileID, in lookup: some CommitLookup) throws(ContainerProtocolError) -> RemoteEntry?
    {
        if let stored = try lookup.storedEntry(id) { return stored }
        return id == .root ? implicitRoot : nil
    }

    package static func decide(_ request: CommitRequest, in lookup: some CommitLookup) throws(ContainerProtocolError)
        -> Decision
    {
        try RequestValidation.check(request)
        let current = try entry(request.id, in: lookup)
        guard request.baseVersion == (current?.version ?? 0) else {
            return .refuse(.versionConflict(current: current))
        }
        switch request.change {
        case .delete:
            guard let current, !current.isDeleted else {
                throw .invalidRequest("entry \(request.id) is not live; there is nothing to delete")
            }
            if current.state.kind == .directory, try lookup.hasLiveChildren(request.id) {
                return .refuse(.directoryNotEmpty)
            }
            return .apply(isDeleted: true, state: current.state)
        case .put(let state):
            if let refusal = try refusal(for: request.id, putting: state, over: current, in: lookup) {
                return .refuse(refusal)
            }
            return .apply(isDeleted: false, state: state)
        }
    }

    private static func refusal(
        for id: FileID, putting state: EntryState, over current: RemoteEntry?, in lookup: some CommitLookup
    ) throws(ContainerProtocolError) -> CommitOutcome? {
        let isLiveDirectory = current.map { !$0.isDeleted && $0.state.kind == .directory } ?? false
        if let parent = state.parent {
            guard let parentEntry = try entry(parent, in: lookup), !parentEntry.isDeleted,
                parentEntry.state.kind == .directory
            else { return .parentMissing }
            if let holder = try lookup.liveChild(of: parent, named: state.name), holder.id != id {
                return .nameTaken(by: holder)
            }
            // Only a live directory has descendants, so only it can end up inside itself.
            if isLiveDirectory, parent != current?.state.parent,
                try isAncestor(id, of: parent, in: lookup)
            {
                return .wouldCreateCycle
            }
        }
        if isLiveDirectory, state.kind != .directory, try lookup.hasLiveChildren(id) {
            return .directoryNotEmpty
        }
        let missing = try lookup.missingChunks(uniqueHashes(of: state.manifest))
        return missing.isEmpty ? nil : .chunksMissing(missing)
    }

    /// Whether `ancestor` is `entry` itself or one of its ancestors (walking parent links).
    private static func isAncestor(_ ancestor: FileID, of entry: FileID, in lookup: some CommitLookup)
        throws(ContainerProtocolError) -> Bool
    {
        var next: FileID? = entry
        var steps = 0
        while let current = next {
            if current == ancestor { return true }
            steps += 1
            guard steps < 100_000 else { throw .storageFailure("the parent chain of \(entry) does not end") }
            next = try lookup.storedEntry(current)?.state.parent
        }
        return false
    }

    private static func uniqueHashes(of manifest: [ChunkRef]) -> [ChunkHash] {
        var seen = Set<ChunkHash>()
        return manifest.compactMap { seen.insert($0.hash).inserted ? $0.hash : nil }
    }
}
