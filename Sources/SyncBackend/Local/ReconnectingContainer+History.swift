/// The history of the container at the path, when it can be reached (the same looks and
/// failures as every other call: `unavailable` while it is away).
extension ReconnectingContainer: ContainerHistory {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        try await forward { container throws(ContainerProtocolError) in
            try await container.history(of: id, limit: limit)
        }
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        try await forward { container throws(ContainerProtocolError) in
            try await container.deletedEntries(before: before, limit: limit)
        }
    }
}
