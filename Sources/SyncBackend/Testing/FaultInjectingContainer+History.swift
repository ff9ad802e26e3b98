/// The base container's history, through the same faults as every other call (operation
/// `history`); a base that keeps no history answers `invalidRequest` saying so.
extension FaultInjectingContainer: ContainerHistory {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        try await historyBase().history(of: id, limit: limit)
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        try await historyBase().deletedEntries(before: before, limit: limit)
    }

    private func historyBase() async throws(ContainerProtocolError) -> any ContainerHistory {
        try await admit(.history)
        guard let history = base as? any ContainerHistory else {
            throw .invalidRequest("this container keeps no history")
        }
        return history
    }
}
