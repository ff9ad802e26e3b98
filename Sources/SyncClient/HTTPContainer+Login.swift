import SyncBackend

extension HTTPContainer {
    /// Logs in at the server of `address` (`POST /v1/login`) and returns the grant with its token.
    /// A refusal is `.refused` with the server's words (wrong credentials, a TOTP code needed,
    /// not a member, too many attempts); anything else is `.unreachable` or `.tls`.
    public static func login(address: ServerAddress, _ request: LoginRequest, caFile: String? = nil)
        async throws(HTTPContainerError) -> LoginGrant
    {
        let probe: HTTPContainer
        do {
            // No bearer token goes with a login: the credentials are the body.
            probe = try HTTPContainer(address: address, token: "", containerID: "", caFile: caFile)
        } catch {
            throw .setup(error.description)
        }
        let answer: Answer
        do {
            answer = try await probe.send(.POST, WireProtocol.Path.login, json: request)
        } catch {
            if let tls = probe.tlsFailure.withLock({ $0 }) { throw .tls(tls) }
            throw .unreachable(error.description)
        }
        guard answer.status == 200 else {
            let refusal = WireAnswer.refusal(answer)
            switch answer.status {
            case 400, 401, 403, 404, 429: throw .refused(refusal.message)
            default: throw .unreachable(WireAnswer.failure(answer, address: address).description)
            }
        }
        do {
            return try WireAnswer.decode(LoginGrant.self, answer, address: address)
        } catch {
            throw .unreachable(error.description)
        }
    }
}
