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

/// The token table of a `PostgresStore` (`syncfs_tokens`) as the server's `TokenAuthority`:
/// `serve --database` without `--tokens`.
///
/// Contract (`TokenAuthority`'s): a malformed token is nil without a query; an unknown or revoked
/// one is nil; a table that cannot be read throws (`503`), never nil. The message never holds the
/// token or the database's credentials (`PostgresStore` errors are redacted).
public struct PostgresTokenAuthority: TokenAuthority {
    public let tokens: PostgresTokens

    public init(store: PostgresStore) { self.tokens = PostgresTokens(store: store) }

    public func authenticate(token: String, address: String?) async throws(SyncServerError) -> AccessGrant? {
        guard TokenFormat.isWellFormed(token) else { return nil }
        do {
            return try await tokens.container(forDigest: TokenFormat.digest(of: token)).map {
                AccessGrant(tokenID: "", user: nil, device: nil, roles: [$0: .editor])
            }
        } catch {
            // The server says "the token database cannot be read: " before it; only the reason here.
            switch error {
            case .unavailable(let reason), .busy(let reason): throw SyncServerError(.failed, reason)
            default: throw SyncServerError(.failed, "\(error)")
            }
        }
    }
}
