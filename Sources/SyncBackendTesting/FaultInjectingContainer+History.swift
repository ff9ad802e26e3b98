import SyncBackend

/// The base container's history, through the same faults as every other call (operation
/// `history`); a base that keeps no history answers `invalidRequest` saying so.
extension FaultInjectingContainer: HistoryForwardingWrapper {
    public func admittedHistory() async throws(ContainerProtocolError) -> any ContainerHistory {
        try await admit(.history)
        return try historyOf(base)
    }
}
