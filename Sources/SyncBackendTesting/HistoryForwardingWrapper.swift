import SyncBackend

/// A test wrapper of a container that forwards its base's history through the wrapper's own
/// faults (`admittedHistory`), so both history calls fail, wait and count like every other call.
public protocol HistoryForwardingWrapper: ContainerHistory {
    /// The base container's history once this wrapper let the call through; `invalidRequest`
    /// if the base keeps none.
    func admittedHistory() async throws(ContainerProtocolError) -> any ContainerHistory
}

extension HistoryForwardingWrapper {
    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        try await admittedHistory().history(of: id, limit: limit)
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        try await admittedHistory().deletedEntries(before: before, limit: limit)
    }
}

/// `base` as a container that keeps history, or `invalidRequest` saying it keeps none.
func historyOf(_ base: any Container) throws(ContainerProtocolError) -> any ContainerHistory {
    guard let history = base as? any ContainerHistory else {
        throw .invalidRequest("this container keeps no history")
    }
    return history
}
