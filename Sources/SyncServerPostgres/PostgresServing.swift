import SyncBackend
import SyncPostgres
import SyncServer

/// The containers of a `PostgresStore`, for the server (`syncfs-mount serve --database`, and the
/// tests that run a server in process on the same backend).
///
/// Contract (`ContainerSource`'s): an unknown name is nil, never created; a store that cannot be
/// reached is `unavailable`.
public struct PostgresContainerSource: ContainerSource {
    public let store: PostgresStore

    public init(store: PostgresStore) { self.store = store }

    public func container(named name: String) async throws(ContainerProtocolError) -> (any Container)? {
        try await store.container(named: name)
    }
}

/// The containers the server's collection schedule goes through (`serve --database --gc-every`):
/// those named by a token, revoked or not — every container a client has ever been able to
/// reach. (A container no token names is collected by `syncfs-mount container gc` only.)
extension PostgresContainerSource: ContainerCatalog {
    public func containerNames() async throws(ContainerProtocolError) -> [String] {
        Array(Set(try await PostgresAccessTables(store: store).tokens().flatMap(\.containers))).sorted()
    }
}
