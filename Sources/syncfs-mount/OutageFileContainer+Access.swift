import SyncBackend

/// The base's role (`ContainerAccess`), through the same switch as every other call: during an
/// outage `refreshAccess` fails `unavailable`. A base that grants no roles gives an editor's.
extension OutageFileContainer: ContainerAccess {
    var knownAccess: AccessRole? { (base as? any ContainerAccess)?.knownAccess }

    var accessScope: String { (base as? any ContainerAccess)?.accessScope ?? containerID }

    func refreshAccess() async throws(ContainerProtocolError) -> AccessRole {
        try admit()
        guard let access = base as? any ContainerAccess else { return .editor }
        return try await access.refreshAccess()
    }

    func onChangeRefused(_ observer: @escaping @Sendable () -> Void) {
        (base as? any ContainerAccess)?.onChangeRefused(observer)
    }
}
