import SyncBackend

/// Where a server's containers come from: the local directories under `--root`
/// (`ContainerRegistry`, the embedded default) or a database (`syncfs-mount serve --database`,
/// a PostgreSQL store whose chunks are in an object store).
///
/// Contract:
/// - `container(named:)` never creates anything: an unknown name is nil (`404`).
/// - A failure to reach the backing store is `unavailable` (retryable), never nil: a client
///   must never take a transient outage for a deleted container.
/// - The name was checked with `ContainerName.isValid` before the call.
public protocol ContainerSource: Sendable {
    func container(named name: String) async throws(ContainerProtocolError) -> (any Container)?
}

/// The embedded default: a `ContainerRegistry` (blocking `stat` and SQLite) run off the
/// cooperative pool.
struct LocalContainerSource: ContainerSource {
    let registry: ContainerRegistry

    func container(named name: String) async throws(ContainerProtocolError) -> (any Container)? {
        let registry = registry
        return try await Offload.run { () throws(ContainerProtocolError) -> (any Container)? in
            try registry.container(named: name)
        }
    }
}
