/// Version history (`ContainerHistory`) and collection (`CollectableContainer`) of the local
/// container; the collection runs on a connection of its own (`LocalCollector`).
extension LocalContainer: ContainerHistory, CollectableContainer {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        let limit = try HistoryPage.size(limit)
        return try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.history(of: id, limit: limit)
        }
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        let limit = try HistoryPage.size(limit)
        return try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.deletedEntries(before: before, limit: limit)
        }
    }

    public func retention() async throws(ContainerProtocolError) -> RetentionPolicy {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in try entries.retention() }
    }

    public func setRetention(_ policy: RetentionPolicy) async throws(ContainerProtocolError) {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.setRetention(policy)
        }
    }

    public func collectGarbage(_ options: CollectionOptions) async throws(ContainerProtocolError) -> CollectionReport {
        try await LocalFileIO.offload { [layout] () throws(ContainerProtocolError) in
            try LocalCollector(layout: layout).collect(options)
        }
    }

    public func storageStats() async throws(ContainerProtocolError) -> StorageStats {
        try await LocalFileIO.offload { [layout] () throws(ContainerProtocolError) in
            try LocalCollector(layout: layout).stats()
        }
    }
}
