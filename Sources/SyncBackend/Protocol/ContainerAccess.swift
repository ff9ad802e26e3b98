/// A container that grants each client a role (`AccessRole`): a sync server's, where the
/// client's token decides what it may do. Containers that grant roles conform beside
/// `Container`; wrappers forward it. A container that does not conform (a local one) lets every
/// client change it: an editor's rights.
///
/// Contract:
/// - `knownAccess`: the role as this client last learnt it from the container (its answer to
///   `refreshAccess`, or any other answer that said it); nil before the first.
/// - `refreshAccess` asks the container now and remembers its answer. A container older than
///   roles answers an editor's. A failure is the call's (`unavailable` when unreachable or when
///   the token is refused altogether): it says nothing about the role.
/// - `onChangeRefused` registers `observer`, called (from the task whose call was refused, outside
///   any lock) each time the container refuses a change — a chunk upload, a commit, a lock —
///   because this client may not make it. The refused call fails as it always did; the observer
///   only says that the role may have changed (the caller asks `refreshAccess`).
public protocol ContainerAccess: Sendable {
    var knownAccess: AccessRole? { get }
    func refreshAccess() async throws(ContainerProtocolError) -> AccessRole
    func onChangeRefused(_ observer: @escaping @Sendable () -> Void)
    /// The container's name where it grants the role (a server's container name), for messages.
    var accessScope: String { get }
}
