/// A local container as the destination of `container copy` (`ImportableContainer`): the
/// entries are written by `LocalEntryStore.importEntries` in one transaction.
extension LocalContainer: ImportableContainer {
    public func importEntries(_ entries: [RemoteEntry]) async throws(ContainerProtocolError) {
        try await LocalFileIO.offload { [store = self.entries, layout] () throws(ContainerProtocolError) in
            try layout.checkReachable()
            try store.importEntries(entries)
        }
    }
}
