/// History, retention and collection of the in-memory container: the reference behaviour of
/// `ContainerHistory` and `CollectableContainer`, for tests. Everything runs under the one lock,
/// so a collection is trivially atomic with respect to commits (`grace` still applies: a chunk
/// stored within it is kept, as an upload not yet committed).
extension InMemoryContainer: ContainerHistory, CollectableContainer {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        let limit = try HistoryPage.size(limit)
        return state.withLock { state in
            var versions: [HistoricVersion] = []
            if let current = state.entries[id], !state.purged.contains(id) {
                versions.append(
                    HistoricVersion(entry: current, committedAt: state.committedAt[id] ?? 0, replacedAt: nil))
            }
            versions += (state.superseded[id] ?? []).reversed()
            return Array(versions.prefix(limit))
        }
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        let limit = try HistoryPage.size(limit)
        return state.withLock { state in
            state.entries.values
                .filter { $0.isDeleted && !state.purged.contains($0.id) && $0.version < (before ?? .max) }
                .sorted { $0.version > $1.version }
                .prefix(limit)
                .map { HistoricVersion(entry: $0, committedAt: state.committedAt[$0.id] ?? 0, replacedAt: nil) }
        }
    }

    public func retention() async throws(ContainerProtocolError) -> RetentionPolicy {
        state.withLock { $0.retention }
    }

    public func setRetention(_ policy: RetentionPolicy) async throws(ContainerProtocolError) {
        if let problem = policy.problem { throw .invalidRequest(problem) }
        state.withLock { $0.retention = policy }
    }

    public func collectGarbage(_ options: CollectionOptions) async throws(ContainerProtocolError) -> CollectionReport {
        let policy = options.retention ?? state.withLock { $0.retention }
        if let problem = policy.problem { throw .invalidRequest(problem) }
        let now = options.now ?? WallClock.nanoseconds()
        let grace = WallClock.nanoseconds(options.grace)
        return state.withLock { state in
            var copy = state
            let report = copy.collect(policy: policy, now: now, grace: grace)
            if !options.dryRun { state = copy }
            return report
        }
    }

    public func storageStats() async throws(ContainerProtocolError) -> StorageStats {
        state.withLock { state in
            var stats = StorageStats()
            for entry in state.entries.values {
                if entry.isDeleted {
                    stats.tombstones += 1
                    if !state.purged.contains(entry.id) { stats.trashedEntries += 1 }
                } else {
                    stats.liveEntries += 1
                    if entry.state.kind == .file { stats.logicalBytes += entry.state.size }
                }
            }
            stats.keptVersions = state.superseded.values.reduce(0) { $0 + $1.count }
            stats.chunks = state.chunks.count
            for chunk in state.chunks.values {
                stats.storedBytes += Int64(LocalChunkFile.headerSize + chunk.payload.count)
                stats.chunkPlainBytes += Int64(chunk.plainLength)
            }
            return stats
        }
    }
}

extension InMemoryContainer.State {
    /// Keeps the current version of `id` (unless none, or a purged tombstone) as superseded.
    mutating func keepSuperseded(_ id: FileID, replacedAt: Int64) {
        guard let current = entries[id], !purged.contains(id) else { return }
        superseded[id, default: []].append(
            HistoricVersion(entry: current, committedAt: committedAt[id] ?? 0, replacedAt: replacedAt))
    }

    /// Prunes, purges and deletes unreferenced chunks stored before `grace`, as `LocalCollector`.
    mutating func collect(policy: RetentionPolicy, now: Int64, grace: Int64) -> CollectionReport {
        var report = CollectionReport()
        for (id, versions) in superseded {
            let kept = versions.reversed().enumerated().filter { rank, version in
                policy.keepsVersion(replacedAt: version.replacedAt ?? 0, rank: rank, now: now)
            }.map(\.element)
            report.versionsPruned += versions.count - kept.count
            superseded[id] = kept.isEmpty ? nil : kept.reversed()
        }
        for entry in entries.values where entry.isDeleted && !purged.contains(entry.id) {
            if !policy.keepsTombstone(deletedAt: committedAt[entry.id] ?? 0, now: now) {
                purged.insert(entry.id)
                report.tombstonesPurged += 1
            }
        }
        var referenced = Set<ChunkHash>()
        for entry in entries.values where !purged.contains(entry.id) {
            for ref in entry.state.manifest { referenced.insert(ref.hash) }
        }
        for versions in superseded.values {
            for version in versions { for ref in version.entry.state.manifest { referenced.insert(ref.hash) } }
        }
        report.chunksExamined = chunks.count
        let clock = WallClock.nanoseconds()
        for (hash, chunk) in chunks where !referenced.contains(hash) {
            if clock - (storedAt[hash] ?? 0) < grace {
                report.chunksInGrace += 1
                continue
            }
            chunks[hash] = nil
            storedAt[hash] = nil
            report.chunksDeleted += 1
            report.bytesFreed += Int64(LocalChunkFile.headerSize + chunk.payload.count)
        }
        return report
    }
}
