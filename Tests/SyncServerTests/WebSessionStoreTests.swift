import SyncServer
import Testing

/// The web page's sessions in an `AccessStore`, the same on both backends (`withAccessStore`).
@Suite struct WebSessionStoreTests {
    private static func digest(_ byte: String) -> String { String(repeating: byte, count: 32) }

    private static func session(_ id: String, user: String = "alice", created: Int64 = 100) -> WebSessionRecord {
        WebSessionRecord(
            id: id, user: user, created: created, lastSeen: created, expires: created + 3600, address: "127.0.0.1",
            agent: "web: a browser")
    }

    @Test(arguments: AccessBackend.allCases) func sessionsAreFoundByDigestListedPerUserAndRevokedOnlyByTheirUser(
        backend: AccessBackend
    ) async throws {
        try await withAccessStore(backend) { store, _ async throws in
            let first = Self.session("0000bbb1")
            let second = Self.session("0000bbb2", created: 200)
            let bobs = Self.session("0000bbb3", user: "bob", created: 150)
            #expect(try await store.insertWebSession(first, digest: Self.digest("b1")))
            #expect(try await store.insertWebSession(second, digest: Self.digest("b2")))
            #expect(try await store.insertWebSession(bobs, digest: Self.digest("b3")))
            #expect(try await !store.insertWebSession(Self.session("0000bbb1"), digest: Self.digest("b9")))
            #expect(try await !store.insertWebSession(Self.session("0000bbb9"), digest: Self.digest("b1")))

            #expect(try await store.webSession(digest: Self.digest("b1")) == first)
            #expect(try await store.webSession(digest: Self.digest("b9")) == nil)
            #expect(try await store.webSessions(user: "alice", limit: 10) == [second, first])
            #expect(try await store.webSessions(user: "alice", limit: 1) == [second])
            #expect(try await store.webSessions(user: "carol", limit: 10) == [])

            // Another user's session is not found, let alone revoked.
            #expect(try await store.revokeWebSession(id: "0000bbb3", user: "alice", at: 300) == nil)
            #expect(try await store.webSession(digest: Self.digest("b3"))?.revoked == nil)
            #expect(try await store.revokeWebSession(id: "0000bbb1", user: "alice", at: 300) == true)
            #expect(try await store.revokeWebSession(id: "0000bbb1", user: "alice", at: 301) == false)
            #expect(try await store.webSession(digest: Self.digest("b1"))?.revoked == 300)

            // Every valid session of one user at once (a new password); the revoked one keeps its time.
            #expect(try await store.revokeWebSessions(user: "alice", at: 350) == 1)
            #expect(try await store.webSession(digest: Self.digest("b2"))?.revoked == 350)
            #expect(try await store.webSession(digest: Self.digest("b1"))?.revoked == 300)
            #expect(try await store.webSession(digest: Self.digest("b3"))?.revoked == nil)

            try await store.touchWebSession(id: "0000bbb2", at: 400, address: "::1")
            let touched = try await store.webSession(digest: Self.digest("b2"))
            #expect(touched?.lastSeen == 400)
            #expect(touched?.address == "::1")
        }
    }

    @Test func aSessionEndsWhenRevokedIdleOrPastItsLifetime() {
        let session = Self.session("0000bbb1")
        #expect(WebSessionPolicy.isLive(session, at: 101))
        #expect(!WebSessionPolicy.isLive(session, at: 100 + 3600))
        var idle = session
        idle.expires = 100 + WebSessionPolicy.absoluteLifetime
        #expect(WebSessionPolicy.isLive(idle, at: 100 + WebSessionPolicy.idleLifetime - 1))
        #expect(!WebSessionPolicy.isLive(idle, at: 100 + WebSessionPolicy.idleLifetime))
        var revoked = idle
        revoked.revoked = 150
        #expect(!WebSessionPolicy.isLive(revoked, at: 151))
    }
}
