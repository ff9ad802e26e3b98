import AsyncHTTPClient
import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import SyncServerTesting
import TestSupport
import Testing

/// A hostile or merely limited token holder against the server's roles, scopes and expiry
/// (doc/SECURITY.md, "Members, roles and tokens"): every refusal stores nothing.
@Suite struct HostileMemberTests {
    /// A user with `role` in the fixture's container and a token for it (`expires` seconds from now).
    static func member(
        _ fixture: ServerFixture, _ name: String, role: AccessRole, containers: [String]? = nil,
        tokenRole: AccessRole? = nil, expires: Int64? = 3_600
    ) async throws -> (admin: AccountAdmin, token: String, id: String) {
        let admin = AccountAdmin(store: try fixture.backend.accessStore(on: fixture.server))
        _ = try await admin.addUser(name)
        try await admin.setMember(user: name, container: fixture.name, role: role)
        let (record, token) = try await admin.createToken(
            user: name, containers: containers ?? [fixture.name], role: tokenRole ?? role,
            expiry: expires.map { .after($0) } ?? .never, label: "test")
        return (admin, token, record.id)
    }

    @Test(arguments: ServerBackend.allCases) func aViewerReadsButEveryWriteIs403AndStoresNothing(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let viewer = try await Self.member(fixture, "vera", role: .viewer)
            let info = try await fixture.send(.GET, fixture.path(), auth: .token(viewer.token))
            #expect(info.status == 200)
            #expect(try info.decode(ContainerInfo.self).access == .viewer)
            #expect(try await fixture.send(.GET, fixture.path("/changes"), auth: .token(viewer.token)).status == 200)

            let chunk = Sample.chunk(Sample.bytes(1000, seed: 3))
            var put = try await fixture.send(
                .PUT, fixture.path("/chunks/\(chunk.hash.hex)"), auth: .token(viewer.token),
                headers: [
                    (WireProtocol.chunkEncodingHeader, WireProtocol.encodingName(chunk.encoding)),
                    (WireProtocol.plainLengthHeader, String(chunk.plainLength)),
                ], body: chunk.payload)
            #expect(put.status == 403 && put.code == .forbidden, "\(put.text)")
            put = try await fixture.send(
                .POST, fixture.path("/chunks/missing"), json: MissingChunksRequest(hashes: [chunk.hash]),
                auth: .token(viewer.token))
            #expect(put.status == 403)
            let commit = Sample.create(Sample.directory("planted"))
            let refused = try await fixture.send(
                .POST, fixture.path("/commits"), json: commit, auth: .token(viewer.token))
            #expect(refused.status == 403 && refused.code == .forbidden)
            #expect(refused.text.contains("viewer"), "\(refused.text)")
            let batch = try await fixture.send(
                .POST, fixture.path("/commits/batch"), json: CommitBatchRequest(changes: [commit]),
                auth: .token(viewer.token))
            #expect(batch.status == 403)
            let allOrNothing = try await fixture.send(
                .POST, fixture.path("/commits/all-or-nothing"), json: CommitBatchRequest(changes: [commit]),
                auth: .token(viewer.token))
            #expect(allOrNothing.status == 403 && allOrNothing.code == .forbidden, "\(allOrNothing.text)")
            let lock = try await fixture.send(.POST, fixture.path("/locks"), body: Array("{}".utf8), viewer.token)
            #expect(lock.status == 403)
            // Nothing reached the container: the commit's entry does not exist.
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await container.entry(commit.id) }
                    == nil)
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.missingChunks([chunk.hash])
                } == [chunk.hash])
        }
    }

    @Test(arguments: ServerBackend.allCases) func aTokenNeverHasMoreThanTheMembershipNow(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let editor = try await Self.member(fixture, "eddie", role: .editor)
            // A token asking for more than the membership is refused when made.
            await #expect(throws: SyncServerError.self) {
                _ = try await editor.admin.createToken(
                    user: "eddie", containers: [fixture.name], role: .admin, expiry: .standard, label: "")
            }
            let commit = Sample.create(Sample.directory("by-eddie"))
            #expect(
                try await fixture.send(.POST, fixture.path("/commits"), json: commit, auth: .token(editor.token)).status
                    == 200)
            // Demoted to viewer: the editor's token is a viewer's from the next request on.
            try await editor.admin.setMember(user: "eddie", container: fixture.name, role: .viewer)
            let after = Sample.create(Sample.directory("after-demotion"))
            #expect(
                try await fixture.send(.POST, fixture.path("/commits"), json: after, auth: .token(editor.token)).status
                    == 403)
            // Removed: the token opens nothing.
            #expect(try await editor.admin.removeMember(user: "eddie", container: fixture.name))
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(editor.token)).status == 403)
        }
    }

    @Test(arguments: ServerBackend.allCases) func aTokenForOneContainerCannotOpenAnother(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            _ = try await fixture.makeContainer("other")
            let member = try await Self.member(fixture, "olga", role: .admin)
            // Olga is an admin in the fixture's container, and not a member of "other".
            let other = WireProtocol.Path.container("other")
            #expect(try await fixture.send(.GET, other, auth: .token(member.token)).status == 403)
            // Even a membership in "other" does not widen a token made for one container.
            try await member.admin.setMember(user: "olga", container: "other", role: .admin)
            #expect(try await fixture.send(.GET, other, auth: .token(member.token)).status == 403)
        }
    }

    @Test(arguments: ServerBackend.allCases) func expiredRevokedDisabledAndDeviceRevokedTokensAre401(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let store = try fixture.backend.accessStore(on: fixture.server)
            let admin = AccountAdmin(store: store)
            _ = try await admin.addUser("paul")
            try await admin.setMember(user: "paul", container: fixture.name, role: .editor)
            // Expired a second ago (inserted directly: the command refuses a past expiry).
            let expired = TokenFormat.newToken()
            let now = Int64(Date().timeIntervalSince1970)
            #expect(
                try await store.insertToken(
                    TokenRecord(
                        id: TokenFormat.newID(), user: "paul", device: nil, containers: [fixture.name], role: .editor,
                        label: "", created: now - 100, expires: now - 1), digest: TokenFormat.digest(of: expired)))
            let reply = try await fixture.send(.GET, fixture.path(), auth: .token(expired))
            #expect(reply.status == 401 && reply.code == .unauthorized)

            let revoked = try await admin.createToken(
                user: "paul", containers: [fixture.name], role: .editor, expiry: .standard, label: "")
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(revoked.token)).status == 200)
            #expect(try await admin.revokeToken(revoked.record.id))
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(revoked.token)).status == 401)

            let device = DeviceRecord(id: TokenFormat.newID(), user: "paul", name: "laptop", created: now)
            #expect(try await store.insertDevice(device))
            let onDevice = try await admin.createToken(
                user: "paul", containers: [fixture.name], role: .editor, expiry: .standard, label: "",
                device: device.id)
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(onDevice.token)).status == 200)
            #expect(try await admin.revokeDevice(device.id))
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(onDevice.token)).status == 401)

            let kept = try await admin.createToken(
                user: "paul", containers: [fixture.name], role: .editor, expiry: .standard, label: "")
            #expect(try await admin.setDisabled("paul", true))
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(kept.token)).status == 401)
            #expect(try await admin.setDisabled("paul", false))
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(kept.token)).status == 200)
            // The legacy container token of the fixture keeps an editor's rights.
            let info = try await fixture.send(.GET, fixture.path())
            #expect(try info.decode(ContainerInfo.self).access == .editor)
            // Each change is in the audit log, with the actor.
            let lines = try await store.audit(container: nil, since: 0, limit: 100)
            for action in [AuditAction.userAdd, .roleChange, .tokenCreate, .tokenRevoke, .deviceRevoke, .userDisable] {
                #expect(lines.contains { $0.action == action.rawValue && $0.actor == "admin" }, "\(action)")
            }
        }
    }

    @Test(arguments: ServerBackend.allCases) func aRevokedTokensLongPollIsClosedOnEveryServer(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let member = try await Self.member(fixture, "lena", role: .viewer)
            // A second server process on the same store (its own connection to the token database).
            let second = try await fixture.backend.startServer(maxConcurrentChunkUploads: 4, limits: nil)
            defer { Task { await second.stop() } }
            let path = fixture.path("/changes/wait?timeout=\(WireProtocol.maxWaitMilliseconds)")
            let started = ContinuousClock.now
            async let first = fixture.send(.GET, path, auth: .token(member.token), timeout: .seconds(90))
            async let other = ServerFixture.execute(
                fixture.client, Self.request(second.baseURL + path, token: member.token), timeout: .seconds(90))
            try await fixture.server.waitUntil("a wait is pending on the first server") { $0.pendingChangeWaits >= 1 }
            try await second.waitUntil("a wait is pending on the second server") { $0.pendingChangeWaits >= 1 }
            #expect(try await member.admin.revokeToken(member.id))
            let (one, two) = try await (first, other)
            #expect(one.status == 401 && two.status == 401, "\(one.text) \(two.text)")
            // Well before the wait's own end (`maxWaitMilliseconds`).
            #expect(ContinuousClock.now - started < .milliseconds(WireProtocol.maxWaitMilliseconds))
            await second.stop()
        }
    }

    static func request(_ url: String, token: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        return request
    }
}

extension ServerFixture {
    /// `POST` of raw bytes with another token.
    fileprivate func send(_ method: HTTPMethod, _ path: String, body: [UInt8], _ token: String) async throws -> Reply {
        try await send(method, path, auth: .token(token), headers: [("Content-Type", "application/json")], body: body)
    }
}

/// The server's own audit lines: commit summaries and refusals, queued and flushed within a second.
@Suite struct ServerAuditTests {
    @Test(arguments: ServerBackend.allCases) func refusalsAndCommitSummariesReachTheAuditLog(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let viewer = try await HostileMemberTests.member(fixture, "vic", role: .viewer)
            let refused = Sample.create(Sample.directory("planted"))
            #expect(
                try await fixture.send(.POST, fixture.path("/commits"), json: refused, auth: .token(viewer.token))
                    .status == 403)
            let committed = Sample.create(Sample.directory("kept"))
            #expect(try await fixture.commit(committed).status == 200)
            let store = try fixture.backend.accessStore(on: fixture.server)
            var lines: [AuditRecord] = []
            try await eventually("the audit lines are flushed") {
                lines = try await store.audit(container: fixture.name, since: 0, limit: 100)
                return lines.contains { $0.action == AuditAction.commit.rawValue }
                    && lines.contains { $0.action == AuditAction.accessRefused.rawValue }
            }
            let refusal = try #require(lines.first { $0.action == AuditAction.accessRefused.rawValue })
            #expect(refusal.actor == "user:vic/token:\(viewer.id)")
            #expect(refusal.result == "role viewer" && refusal.target == "POST /v1/containers/NAME/commits")
            #expect(refusal.address == "127.0.0.1")
            let commit = try #require(lines.first { $0.action == AuditAction.commit.rawValue })
            #expect(commit.result == "1 committed, 0 refused" && commit.actor.hasPrefix("token:"))
        }
    }
}
