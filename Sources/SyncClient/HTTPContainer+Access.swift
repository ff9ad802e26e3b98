import SyncBackend
import Synchronization

/// The role the server grants this client's token (`ContainerAccess`), from `GET .../NAME`'s
/// `access` (absent from a server older than roles: an editor's).
extension HTTPContainer: ContainerAccess {
    public var knownAccess: AccessRole? { access.known }

    public var accessScope: String { address.name }

    public func refreshAccess() async throws(ContainerProtocolError) -> AccessRole {
        let answer = try await send(.GET, WireProtocol.Path.container(address.name))
        guard answer.status == 200 else { throw WireAnswer.failure(answer, address: address) }
        let info = try WireAnswer.decode(ContainerInfo.self, answer, address: address)
        features.remember(info.features)
        return access.remember(info)
    }

    public func onChangeRefused(_ observer: @escaping @Sendable () -> Void) {
        access.observe(observer)
    }

    /// Records what `info` (an answer about this server's container, e.g. `fetchInfo`'s) says
    /// of the token's role; returns it.
    @discardableResult
    public func remember(_ info: ContainerInfo) -> AccessRole {
        access.remember(info)
    }
}

/// What one `HTTPContainer` knows of its token's role, and the observers of refused changes: a
/// `403 forbidden` answer to a request that changes the container (any method but `GET`).
final class ServerAccess: Sendable {
    private let role = Mutex<AccessRole?>(nil)
    private let observers = Mutex<[@Sendable () -> Void]>([])

    var known: AccessRole? { role.withLock { $0 } }

    @discardableResult
    func remember(_ info: ContainerInfo) -> AccessRole {
        let granted = info.access ?? .editor
        role.withLock { $0 = granted }
        return granted
    }

    func observe(_ observer: @escaping @Sendable () -> Void) {
        observers.withLock { $0.append(observer) }
    }

    func changeRefused() {
        for observer in observers.withLock({ $0 }) { observer() }
    }
}
