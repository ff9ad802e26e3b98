import SyncBackend

extension HTTPContainer {
    /// Logs in at the server of `address` (`POST /v1/login`) and returns the grant with its token.
    /// The grant is checked before it is returned: a token's and IDs' shapes, the user and
    /// container asked for (else `.unreachable`: a malformed answer). A refusal is `.refused`
    /// with the server's words (wrong credentials, a TOTP code needed, not a member, too many
    /// attempts); anything else is `.unreachable` or `.tls`.
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
        let grant: LoginGrant
        do {
            grant = try WireAnswer.decode(LoginGrant.self, answer, address: address)
        } catch {
            throw .unreachable(error.description)
        }
        // The server's words go to a file and a terminal: only the shapes a login answer has.
        guard Self.isToken(grant.token), Self.isPublicID(grant.tokenID), Self.isPublicID(grant.device),
            grant.user == request.user, grant.container == request.container
        else {
            throw .unreachable("\(address.origin) answered the login with a malformed grant")
        }
        return grant
    }

    /// `sfs_` and 64 lowercase hex digits, as every server token is.
    static func isToken(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 68 && text.hasPrefix("sfs_") && bytes.dropFirst(4).allSatisfy(isLowerHex)
    }

    /// 8 lowercase hex digits: a token's or device's public ID.
    static func isPublicID(_ text: String) -> Bool { text.utf8.count == 8 && text.utf8.allSatisfy(isLowerHex) }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }
}
