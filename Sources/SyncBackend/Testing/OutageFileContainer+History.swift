/// The base container's history, through the same outage switch as every other call; a base
/// that keeps no history answers `invalidRequest` saying so.
extension OutageFileContainer: HistoryForwardingWrapper {
    public func admittedHistory() async throws(ContainerProtocolError) -> any ContainerHistory {
        try admit()
        return try historyOf(base)
    }
}
