/// Name lookups of the in-memory container: the reference behaviour of `ContainerTree`, for
/// tests. Scans every entry under the lock (fine for the sizes tests use).
extension InMemoryContainer: ContainerTree {
    public func child(named name: [UInt8], of parent: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        state.withLock { state in
            guard state.isLiveDirectory(parent) else { return nil }
            return state.entries.values.first { !$0.isDeleted && $0.state.parent == parent && $0.state.name == name }
        }
    }

    public func children(of parent: FileID, after: [UInt8]?, limit: Int) async throws(ContainerProtocolError)
        -> [RemoteEntry]
    {
        let limit = try TreePage.size(limit)
        return state.withLock { state in
            guard state.isLiveDirectory(parent) else { return [] }
            return state.entries.values
                .filter { entry in
                    !entry.isDeleted && entry.state.parent == parent
                        && (after.map { $0.lexicographicallyPrecedes(entry.state.name) } ?? true)
                }
                .sorted { $0.state.name.lexicographicallyPrecedes($1.state.name) }
                .prefix(limit)
                .map { $0 }
        }
    }
}

extension InMemoryContainer.State {
    fileprivate func isLiveDirectory(_ id: FileID) -> Bool {
        if id == .root { return true }
        guard let entry = entries[id] else { return false }
        return !entry.isDeleted && entry.state.kind == .directory
    }
}
