import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// A container's admin endpoints (doc/PROTOCOL.md "Container admins"): members, links and the
/// audit log for that container's admins, and nobody else.
@Suite struct ContainerAdminEndpointTests {
    @Test(arguments: ServerBackend.allCases) func anAdminManagesLinksAndMembersOfItsContainer(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            _ = try await LinkTree.make(in: fixture)
            let boss = try await HostileMemberTests.member(fixture, "boss", role: .admin)
            _ = try await boss.admin.addUser("newbie")

            let made = try await fixture.send(
                .POST, fixture.path("/links"),
                json: LinkOrderRequest(path: "docs", kind: .view, expiresIn: 3_600, label: "for the client"),
                auth: .token(boss.token))
            #expect(made.status == 201, "\(made.text)")
            let created = try made.decode(CreatedLink.self)
            #expect(created.path == "/v1/links/" + created.secret)
            #expect(try await fixture.link(created.secret, "/content?path=a.txt").status == 200)

            let listed = try await fixture.send(.GET, fixture.path("/links"), auth: .token(boss.token))
            let links = try listed.decode(LinkList.self).links
            #expect(links.map(\.id) == [created.link.id] && links[0].createdBy.hasPrefix("user:boss/"))
            #expect(!listed.text.contains(created.secret) && !listed.text.contains("argon2"))

            let revoked = try await fixture.send(
                .POST, fixture.path("/links/\(created.link.id)/revoke"), auth: .token(boss.token))
            #expect(try revoked.decode(RevokeAnswer.self).revoked)
            #expect(try await fixture.link(created.secret).status == 404)

            let added = try await fixture.send(
                .POST, fixture.path("/members"), json: MemberChange(user: "newbie", role: .viewer),
                auth: .token(boss.token))
            #expect(added.status == 200, "\(added.text)")
            let members = try await fixture.send(.GET, fixture.path("/members"), auth: .token(boss.token))
            #expect(try members.decode(MemberList.self).members.contains { $0.user == "newbie" && $0.role == .viewer })
            #expect(
                try await fixture.send(.DELETE, fixture.path("/members/newbie"), auth: .token(boss.token)).status == 204
            )
            #expect(
                try await fixture.send(.DELETE, fixture.path("/members/newbie"), auth: .token(boss.token)).status == 404
            )
            let unknown = try await fixture.send(
                .POST, fixture.path("/members"), json: MemberChange(user: "nobody", role: .admin),
                auth: .token(boss.token))
            #expect(unknown.status == 400, "an admin names users, never makes them")

            let audit = try await fixture.send(
                .GET, fixture.path("/audit?since=0&limit=1000"), auth: .token(boss.token))
            let actions = try audit.decode(AuditPage.self).lines.map(\.action)
            for action in [AuditAction.linkCreate, .linkRevoke, .roleChange, .memberRemove] {
                #expect(actions.contains(action.rawValue), "\(action)")
            }
            #expect(try audit.decode(AuditPage.self).lines.allSatisfy { $0.container == fixture.name })
        }
    }

    @Test(arguments: ServerBackend.allCases) func editorsViewersAndOtherContainersAdminsAreRefused(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            _ = try await LinkTree.make(in: fixture)
            let editor = try await HostileMemberTests.member(fixture, "eddie", role: .editor)
            _ = try await fixture.makeContainer("other")
            let admin = AccountAdmin(store: try fixture.backend.accessStore(on: fixture.server))
            _ = try await admin.addUser("olga")
            try await admin.setMember(user: "olga", container: "other", role: .admin)
            let olga = try await admin.createToken(
                user: "olga", containers: ["other"], role: .admin, expiry: .standard, label: "")
            let (theirs, theirSecret) = try await LinkTree.link(
                fixture, .init(container: fixture.name, prefix: "docs", kind: .view))

            let viewer = try await HostileMemberTests.member(fixture, "vera", role: .viewer)
            let before = try await fixture.send(.GET, fixture.path("/retention"), auth: .token(viewer.token))
            #expect(before.status == 200, "a member reads the retention")
            let order = LinkOrderRequest(path: "", kind: .view)
            for token in [editor.token, viewer.token, olga.token] {
                let keepLess = try await fixture.send(
                    .PUT, fixture.path("/retention"), json: RetentionPolicy(days: 0), auth: .token(token))
                #expect(keepLess.status == 403)
                #expect(
                    try await fixture.send(.POST, fixture.path("/links"), json: order, auth: .token(token)).status
                        == 403)
                #expect(try await fixture.send(.GET, fixture.path("/links"), auth: .token(token)).status == 403)
                #expect(try await fixture.send(.GET, fixture.path("/members"), auth: .token(token)).status == 403)
                #expect(try await fixture.send(.GET, fixture.path("/audit"), auth: .token(token)).status == 403)
                let promote = try await fixture.send(
                    .POST, fixture.path("/members"), json: MemberChange(user: "eddie", role: .admin),
                    auth: .token(token))
                #expect(promote.status == 403)
            }
            // Olga is an admin of "other": the same link ID there is not this container's link.
            let crossed = try await fixture.send(
                .POST, "/v1/containers/other/links/\(theirs.id)/revoke", auth: .token(olga.token))
            #expect(crossed.status == 404, "\(crossed.status) \(crossed.text)")
            #expect(try await fixture.link(theirSecret).status == 200, "still valid")
            #expect(try await admin.roles(of: "eddie")[fixture.name] == .editor)
            let after = try await fixture.send(.GET, fixture.path("/retention"))
            #expect(
                try after.decode(RetentionPolicy.self) == before.decode(RetentionPolicy.self),
                "the retention is unchanged")
        }
    }
}

extension AccountAdmin {
    fileprivate func roles(of user: String) async throws -> [String: AccessRole] {
        try await store.roles(user: user)
    }
}
