import SyncBackend

/// The server's tree digest (`GET .../digest`; doc/PROTOCOL.md "The tree digest"): one request,
/// the server computing it. An answer that does not decode, or whose digest is not 64 hex
/// digits, is `unavailable` (the server is not speaking this protocol); a server older than the
/// digest answers `404`, also `unavailable`, its message saying so.
extension HTTPContainer {
    public func treeDigest() async throws(ContainerProtocolError) -> TreeDigest {
        let answer = try await send(.GET, WireProtocol.Path.digest(address.name))
        guard answer.status == 200 else {
            let failure = WireAnswer.failure(answer, address: address)
            if answer.status == 404, case .unavailable(let message) = failure {
                throw .unavailable(message + " (a server older than the tree digest answers so as well)")
            }
            throw failure
        }
        let digest = try WireAnswer.decode(TreeDigest.self, answer, address: address)
        guard digest.isWellFormed else {
            throw .unavailable("\(address.origin) sent a tree digest that breaks the protocol")
        }
        return digest
    }
}
