import SyncBackend

/// Finds an entry by a path of names in a container's live tree (`ContainerTree`), one name at a
/// time from the root.
///
/// Contract: a path goes only through live directories: a file or a symlink on the way ends the
/// walk with nil (a symlink is never followed, whatever its target says), as does a name that is
/// not there. The empty path is the root.
struct TreeWalk: Sendable {
    let container: any Container
    let tree: any ContainerTree

    /// The live entry at `names` below the root, or nil.
    func entry(at names: [[UInt8]]) async throws(ContainerProtocolError) -> RemoteEntry? {
        guard var current = try await container.entry(.root) else { return nil }
        for name in names {
            guard current.state.kind == .directory else { return nil }
            guard let child = try await tree.child(named: name, of: current.id) else { return nil }
            current = child
        }
        return current.isDeleted ? nil : current
    }
}
