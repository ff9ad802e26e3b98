/// Name lookups (`ContainerTree`) of the local container, off the cooperative pool.
extension LocalContainer: ContainerTree {
    public func child(named name: [UInt8], of parent: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.child(named: name, of: parent)
        }
    }

    public func children(of parent: FileID, after: [UInt8]?, limit: Int) async throws(ContainerProtocolError)
        -> [RemoteEntry]
    {
        let limit = try TreePage.size(limit)
        return try await LocalFileIO.offload { [entries] () throws(ContainerProtocolError) in
            try entries.children(of: parent, after: after, limit: limit)
        }
    }
}
