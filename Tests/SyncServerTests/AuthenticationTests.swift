import Foundation
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// Tokens: missing, unknown, malformed, revoked (while the server runs) and of another container
/// are refused before anything is read or stored; the health check needs none.
@Suite struct AuthenticationTests {
    @Test(arguments: ServerBackend.allCases) func healthNeedsNoToken(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let reply = try await fixture.send(.GET, WireProtocol.Path.health, auth: .none)
            #expect(reply.status == 200)
            #expect(try reply.decode(HealthStatus.self) == HealthStatus(status: "ok"))
        }
    }

    @Test(arguments: ServerBackend.allCases) func missingOrUnknownTokensAre401AndStoreNothing(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let request = Sample.create(Sample.directory("secret"))
            let refusals: [ServerFixture.Auth] = [
                .none,
                .token("sfs_" + String(repeating: "0", count: 64)),  // well-formed, unknown
                .token(fixture.token + "0"),  // malformed
                .token(String(fixture.token.dropFirst(4))),  // without the prefix
                .token(""),
                .header("Basic \(fixture.token)"),  // another scheme
                .header(fixture.token),  // no scheme
            ]
            for auth in refusals {
                let reply = try await fixture.send(.POST, fixture.path("/commits"), json: request, auth: auth)
                #expect(reply.status == 401, "\(auth)")
                #expect(reply.code == .unauthorized, "\(auth): \(reply.text)")
                #expect(reply.headers.first(name: "WWW-Authenticate")?.hasPrefix("Bearer") == true)
            }
            // Nothing about the path leaks without a token: an unknown endpoint is 401 too.
            let unknown = try await fixture.send(.GET, "/v1/nothing/here", auth: .none)
            #expect(unknown.status == 401)
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await container.entry(request.id) }
                    == nil)
            // The scheme is case-insensitive.
            let lowercase = try await fixture.send(.GET, fixture.path(), auth: .header("bearer \(fixture.token)"))
            #expect(lowercase.status == 200)
        }
    }

    @Test(arguments: ServerBackend.allCases) func aTokenRevokedWhileServingIsRefusedAtOnce(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let (id, token) = try await fixture.createToken(container: fixture.name, label: "to revoke")
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(token)).status == 200)
            #expect(try await fixture.backend.revoke(id: id, on: fixture.server))
            let reply = try await fixture.send(.GET, fixture.path(), auth: .token(token))
            #expect(reply.status == 401)
            #expect(reply.code == .unauthorized)
            // Revoking again says so; an unknown ID is bad input.
            #expect(try await fixture.backend.revoke(id: id, on: fixture.server) == false)
            await #expect(throws: (any Error).self) {
                try await fixture.backend.revoke(id: "00000000", on: fixture.server)
            }
            // Other tokens keep working.
            #expect(try await fixture.send(.GET, fixture.path()).status == 200)
            let listed = try await fixture.backend.token(id: id, on: fixture.server)
            #expect(listed?.revoked == true)
            #expect(listed?.label == "to revoke")
        }
    }

    @Test(arguments: ServerBackend.allCases) func aTokenOfAnotherContainerIs403(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let otherToken = try await fixture.makeContainer("other")
            let request = Sample.create(Sample.directory("intruder"))
            let reply = try await fixture.send(.POST, fixture.path("/commits"), json: request, auth: .token(otherToken))
            #expect(reply.status == 403)
            #expect(reply.code == .forbidden)
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await container.entry(request.id) }
                    == nil)
            // The same token does open its own container.
            let own = try await fixture.send(.GET, WireProtocol.Path.container("other"), auth: .token(otherToken))
            #expect(own.status == 200)
            #expect(try own.decode(ContainerInfo.self).name == "other")
        }
    }

    @Test func tokensAreStoredOnlyAsDigestsInAPrivateDatabase() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try TokenStore(root: directory.path)
        let (id, token) = try store.create(container: "box", label: "laptop")
        #expect(token.hasPrefix("sfs_") && token.utf8.count == 68)
        #expect(id.utf8.count == 8)
        let access = AccessControl(store: EmbeddedAccessStore(store: store))
        #expect(try await access.authenticate(token: token, address: nil)?.roles == ["box": .editor])
        let database = try Data(contentsOf: URL(fileURLWithPath: TokenStore.path(root: directory.path)))
        #expect(database.range(of: Data(token.utf8)) == nil, "the token itself must not be stored")
        #expect(try permissions(TokenStore.directory(root: directory.path)) == 0o700)
        #expect(try permissions(TokenStore.path(root: directory.path)) == 0o600)
        // A second store (another process) sees the same tokens; names are checked.
        let other = AccessControl(store: EmbeddedAccessStore(store: try TokenStore(root: directory.path)))
        #expect(try await other.authenticate(token: token, address: nil)?.roles == ["box": .editor])
        #expect(throws: SyncServerError.self) { try store.create(container: "../etc", label: "") }
    }

    private func permissions(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }
}
