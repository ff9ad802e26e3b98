import Foundation
import SyncBackend
import SyncClient
import SyncServer
import Synchronization
import Testing

/// `HTTPContainer` as `ContainerAccess`: the role the server grants the token, from `GET
/// .../NAME`'s `access` (`fetchInfo` at the mount's start, `refreshAccess` later), and a change
/// the server refuses with `403 forbidden` reported to the observers so the mount reads the role
/// again.
@Suite struct HTTPContainerAccessTests {
    /// A token with a viewer's rights in `fixture`'s container (a user who is a viewer there).
    static func viewerToken(_ fixture: ServerFixture) async throws -> String {
        let store = EmbeddedAccessStore(store: try #require(fixture.server.tokens))
        #expect(try await store.insertUser(UserRecord(name: "vera", passwordHash: nil, created: 0)))
        try await store.setMembership(MembershipRecord(user: "vera", container: fixture.name, role: .viewer))
        let token = TokenFormat.newToken()
        let record = TokenRecord(
            id: TokenFormat.newID(), user: "vera", device: nil, containers: [fixture.name], role: .viewer,
            label: "viewer", created: 0, expires: nil)
        #expect(try await store.insertToken(record, digest: TokenFormat.digest(of: token)))
        return token
    }

    static func client(_ fixture: ServerFixture, token: String) async throws -> (HTTPContainer, ContainerInfo) {
        let address = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
        let info = try await HTTPContainer.fetchInfo(address: address, token: token)
        return (try HTTPContainer(address: address, token: token, containerID: info.id), info)
    }

    @Test func theRoleComesFromTheContainerInfoAndARefusedChangeIsReported() async throws {
        try await ServerFixture.run { fixture in
            let token = try await Self.viewerToken(fixture)
            let (viewer, info) = try await Self.client(fixture, token: token)
            #expect(info.access == .viewer)
            #expect(viewer.knownAccess == nil, "nothing learnt before it is told")
            viewer.remember(info)
            #expect(viewer.knownAccess == .viewer)
            #expect(viewer.accessScope == fixture.name)

            let refusals = Atomic<Int>(0)
            viewer.onChangeRefused { refusals.add(1, ordering: .relaxed) }
            // Reads are a viewer's right: nothing reported.
            _ = try await viewer.changes(after: .beginning, limit: 10)
            #expect(refusals.load(ordering: .relaxed) == 0)
            // A chunk upload is an editor's: refused as before (retryable), and reported.
            await #expect(throws: ContainerProtocolError.self) {
                try await viewer.putChunk(Sample.chunk(Sample.bytes(100)))
            }
            #expect(refusals.load(ordering: .relaxed) >= 1)
            #expect(try await viewer.refreshAccess() == .viewer)

            // The fixture's own token is a legacy editor's.
            let (editor, editorInfo) = try await Self.client(fixture, token: fixture.token)
            #expect(editorInfo.access == .editor)
            #expect(try await editor.refreshAccess() == .editor)
            #expect(editor.knownAccess == .editor)
        }
    }

    @Test func aFailoverContainerForwardsTheRoleAndTheRefusals() async throws {
        try await ServerFixture.run { fixture in
            let token = try await Self.viewerToken(fixture)
            let (server, _) = try await Self.client(fixture, token: token)
            let failover = FailoverContainer(servers: [server])
            let refusals = Atomic<Int>(0)
            failover.onChangeRefused { refusals.add(1, ordering: .relaxed) }
            #expect(try await failover.refreshAccess() == .viewer)
            #expect(failover.knownAccess == .viewer)
            await #expect(throws: ContainerProtocolError.self) {
                try await failover.putChunk(Sample.chunk(Sample.bytes(100)))
            }
            #expect(refusals.load(ordering: .relaxed) >= 1)
        }
    }
}
