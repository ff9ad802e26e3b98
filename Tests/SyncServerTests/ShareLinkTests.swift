import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// Share links as their holders use them (doc/PROTOCOL.md "Share links"), on both backends: a
/// link opens its path and nothing beside it, each kind only its own endpoints.
@Suite struct ShareLinkTests {
    @Test(arguments: ServerBackend.allCases) func aViewLinkBrowsesAndDownloadsItsFolderWithoutAToken(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let tree = try await LinkTree.make(in: fixture)
            let (_, secret) = try await LinkTree.link(
                fixture, .init(container: fixture.name, prefix: "docs", kind: .view))

            let info = try await fixture.link(secret)
            #expect(info.status == 200, "\(info.text)")
            #expect(try info.decode(LinkInfo.self).kind == "view")
            #expect(try info.decode(LinkInfo.self).name == "docs")
            #expect(info.headers["Cache-Control"].first == "no-store")
            #expect(info.headers["Referrer-Policy"].first == "no-referrer")

            let listing = try await fixture.link(secret, "/list")
            #expect(listing.status == 200, "\(listing.text)")
            let entries = try listing.decode(LinkListing.self).entries
            #expect(entries.map(\.name) == ["a.txt", "sub", "up"])
            #expect(entries.map(\.kind) == ["file", "directory", "symlink"])
            #expect(entries[0].size == Int64(tree.a.count))
            #expect(!listing.text.contains("secret"), "a symlink's target is never shown")

            let sub = try await fixture.link(secret, "/list?path=sub")
            #expect(try sub.decode(LinkListing.self).entries.map(\.path) == ["sub/b.txt"])

            let a = try await fixture.link(secret, "/content?path=a.txt")
            #expect(a.status == 200)
            #expect(a.body == tree.a)
            #expect(a.headers["Content-Disposition"].first?.hasPrefix("attachment;") == true)
            #expect(a.headers["X-Content-Type-Options"].first == "nosniff")
            let b = try await fixture.link(secret, "/content?path=sub%2Fb.txt")
            #expect(b.status == 200 && b.body == tree.b, "an encoded / is a separator, still below the link")
        }
    }

    @Test(arguments: ServerBackend.allCases) func nothingOutsideAViewLinksFolderCanBeReached(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            _ = try await LinkTree.make(in: fixture)
            let (_, secret) = try await LinkTree.link(
                fixture, .init(container: fixture.name, prefix: "docs", kind: .view))
            let escapes = [
                "..%2Fsecret.txt", "../secret.txt", "%2e%2e/secret.txt", "sub/../../secret.txt", "/secret.txt",
                "./a.txt", "sub//b.txt", "a.txt%00", "%2e%2e",
            ]
            for path in escapes {
                let reply = try await fixture.link(secret, "/content?path=" + path)
                #expect(reply.status == 400, "\(path): \(reply.status) \(reply.text)")
                #expect(!reply.body.starts(with: Array("the secret".utf8)))
            }
            // The symlink is a name in the listing and nothing more: never followed.
            for path in ["up", "up/", "up/secret.txt"] {
                let reply = try await fixture.link(secret, "/content?path=" + path)
                #expect([400, 404].contains(reply.status), "\(path): \(reply.status)")
            }
            #expect(try await fixture.link(secret, "/list?path=up").status == 404)
            #expect(try await fixture.link(secret, "/content?path=a.txt/x").status == 404)
            #expect(try await fixture.link(secret, "/content?path=sub").status == 404)
            #expect(try await fixture.link(secret, "/content?path=missing").status == 404)
            // A view link adds nothing.
            let upload = try await fixture.link(secret, "/upload?name=x", method: .POST, body: [1, 2, 3])
            #expect(upload.status == 403)
        }
    }

    @Test(arguments: ServerBackend.allCases) func aDownloadLinkOpensOneFileAndCountsItsDownloads(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let tree = try await LinkTree.make(in: fixture)
            let (record, secret) = try await LinkTree.link(
                fixture, .init(container: fixture.name, prefix: "docs/sub/b.txt", kind: .download, maxDownloads: 2))
            let info = try await fixture.link(secret).decode(LinkInfo.self)
            #expect(info.size == Int64(tree.b.count) && info.downloadsLeft == 2 && info.name == "b.txt")
            #expect(try await fixture.link(secret, "/list").status == 403)
            #expect(try await fixture.link(secret, "/content?path=a.txt").status == 400)
            for _ in 0..<2 {
                let reply = try await fixture.link(secret, "/content")
                #expect(reply.status == 200 && reply.body == tree.b)
                #expect(reply.headers["Content-Disposition"].first?.contains("filename=\"b.txt\"") == true)
            }
            let third = try await fixture.link(secret, "/content")
            #expect(third.status == 404 && third.text.contains("no downloads left"), "\(third.text)")
            let store = try fixture.backend.accessStore(on: fixture.server)
            #expect(try await store.links(container: fixture.name).first { $0.id == record.id }?.downloads == 2)
        }
    }

    @Test(arguments: ServerBackend.allCases) func anUploadOnlyLinkAddsFilesButNeverListsReadsOrReplaces(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let tree = try await LinkTree.make(in: fixture)
            let (record, secret) = try await LinkTree.link(
                fixture, .init(container: fixture.name, prefix: "drop", kind: .uploadOnly))
            #expect(try await fixture.link(secret, "/list").status == 403)
            #expect(try await fixture.link(secret, "/content?path=taken.txt").status == 403)

            // Larger than a chunk's maximum: cut into several chunks as a mount would.
            let big = Sample.bytes(9 << 20, seed: 9)
            let first = try await fixture.link(secret, "/upload?name=taken.txt", method: .POST, body: big)
            #expect(first.status == 201, "\(first.text)")
            #expect(try first.decode(LinkUploadAnswer.self).size == Int64(big.count))
            #expect(!first.text.contains("taken"), "the answer does not say which name the file got")
            let second = try await fixture.link(secret, "/upload?name=taken.txt", method: .POST, body: [7])
            #expect(second.status == 201)
            for name in ["..", "a/b", "", "%2e%2e", "x%00y"] {
                let refused = try await fixture.link(secret, "/upload?name=" + name, method: .POST, body: [1])
                #expect(refused.status == 400, "\(name): \(refused.status)")
            }

            let container = try await fixture.container()
            guard let tree2 = container as? any ContainerTree else { throw TestFailure("no ContainerTree") }
            let names = try await onDisk { () async throws(ContainerProtocolError) in
                try await tree2.children(of: tree.drop, after: nil, limit: 100)
            }
            let byName = Dictionary(
                uniqueKeysWithValues: names.map { (String(decoding: $0.state.name, as: UTF8.self), $0) })
            #expect(byName.keys.sorted() == ["taken (2).txt", "taken (3).txt", "taken.txt"])
            #expect(try await Self.content(of: byName["taken.txt"], in: container) == tree.taken)
            #expect(try await Self.content(of: byName["taken (2).txt"], in: container) == big)
            #expect((byName["taken (2).txt"]?.state.manifest.count ?? 0) >= 3)
            #expect(byName["taken (3).txt"]?.device == "link:\(record.id)")
        }
    }

    @Test(arguments: ServerBackend.allCases) func aLinkPasswordIsNeededAndWrongGuessesAreThrottled(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            _ = try await LinkTree.make(in: fixture)
            let (record, secret) = try await LinkTree.link(
                fixture, .init(container: fixture.name, prefix: "docs", kind: .view, password: "correct horse"))
            let none = try await fixture.link(secret)
            #expect(none.status == 401)
            #expect(none.headers["WWW-Authenticate"].first?.hasPrefix("Basic") == true)
            #expect(try await fixture.link(secret, password: "correct horse").status == 200)
            for _ in 0..<LinkService.linkLimit {
                #expect(try await fixture.link(secret, password: "wrong guess!").status == 401)
            }
            let throttled = try await fixture.link(secret, password: "correct horse")
            #expect(throttled.status == 429, "even the right password waits: \(throttled.text)")
            #expect(throttled.headers["Retry-After"].first != nil)
            let store = try fixture.backend.accessStore(on: fixture.server)
            let lines = try await store.audit(container: fixture.name, since: 0, limit: 1000)
            let failed = lines.filter {
                $0.action == AuditAction.linkFailed.rawValue && $0.actor == "link:\(record.id)"
            }
            #expect(failed.count == LinkService.linkLimit + 1, "each failure and the throttling are audited")
        }
    }

    @Test(arguments: ServerBackend.allCases) func revokedExpiredAndForgedLinksOpenNothing(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            _ = try await LinkTree.make(in: fixture)
            let (record, secret) = try await LinkTree.link(
                fixture, .init(container: fixture.name, prefix: "docs", kind: .view))
            #expect(try await fixture.link(secret).status == 200)
            let admin = AccountAdmin(store: try fixture.backend.accessStore(on: fixture.server))
            #expect(try await admin.revokeLink(record.id, container: fixture.name))
            let revoked = try await fixture.link(secret, "/content?path=a.txt")
            #expect(revoked.status == 404 && revoked.text.contains("revoked"))
            #expect(revoked.headers["Cache-Control"].first == "no-store", "refusals are not cached either")
            #expect(revoked.headers["Referrer-Policy"].first == "no-referrer")

            let past = AccessControl.unixNow() - 2 * 86_400
            let (_, old) = try await LinkTree.link(
                fixture, .init(container: fixture.name, prefix: "docs", kind: .view, expiry: .after(86_400)),
                now: { past })
            let expired = try await fixture.link(old, "/list")
            #expect(expired.status == 404 && expired.text.contains("expired"))

            let forged = "lnk_" + String(repeating: "0", count: 64)
            for candidate in [
                forged, "lnk_", secret.uppercased(), "sfs_" + secret.dropFirst(4), String(secret.dropLast()),
            ] {
                #expect(try await fixture.link(candidate).status == 404, "\(candidate)")
            }
            // A bearer token is no link: the container's own token opens nothing here.
            #expect(try await fixture.send(.GET, "/v1/links/" + fixture.token).status == 404)
            let wrongMethod = try await fixture.link(secret, "/content", method: .DELETE)
            #expect(wrongMethod.status == 405)
        }
    }

    /// The bytes of a file entry, read from its chunks.
    static func content(of entry: RemoteEntry?, in container: any Container) async throws -> [UInt8] {
        guard let entry else { throw TestFailure("no such entry") }
        var bytes: [UInt8] = []
        for reference in entry.state.manifest {
            let chunk = try await onDisk { () async throws(ContainerProtocolError) in
                try await container.chunk(reference.hash)
            }
            bytes += try ChunkCodec.decode(chunk)
        }
        return bytes
    }
}
