import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// A small tree in a fixture's container for the link tests, and ways to reach it by link.
///
///     docs/            a.txt ("alpha…"), sub/b.txt, up -> ../secret.txt (a symlink)
///     secret.txt       outside every link below docs
///     drop/            an upload-only link's folder, with taken.txt
struct LinkTree {
    let docs: FileID
    let drop: FileID
    let a: [UInt8]
    let b: [UInt8]
    let secret: [UInt8]
    let taken: [UInt8]

    static func make(in fixture: ServerFixture) async throws -> LinkTree {
        let container = try await fixture.container()
        let a = Sample.bytes(300_000, seed: 1)
        let b = Sample.bytes(1_000, seed: 2)
        let secret = Array("the secret".utf8)
        let taken = Array("was here first".utf8)
        let docs = FileID.random()
        let sub = FileID.random()
        let drop = FileID.random()
        let chunks = [a, b, secret, taken].map(Sample.chunk)
        try await onDisk { () async throws(ContainerProtocolError) in
            try await container.putChunks(chunks)
            let outcomes = try await container.commit(batch: [
                Sample.create(Sample.directory("docs"), id: docs),
                Sample.create(Sample.file("a.txt", parent: docs, chunks: [chunks[0]])),
                Sample.create(Sample.directory("sub", parent: docs), id: sub),
                Sample.create(Sample.file("b.txt", parent: sub, chunks: [chunks[1]])),
                Sample.create(
                    EntryState(
                        parent: docs, name: Array("up".utf8), kind: .symlink, mode: 0o777, mtime: 1, size: 0,
                        symlinkTarget: Array("../secret.txt".utf8))),
                Sample.create(Sample.file("secret.txt", chunks: [chunks[2]])),
                Sample.create(Sample.directory("drop"), id: drop),
                Sample.create(Sample.file("taken.txt", parent: drop, chunks: [chunks[3]])),
            ])
            for outcome in outcomes {
                guard case .committed = outcome else { throw .invalidRequest("the link tree: \(outcome)") }
            }
        }
        return LinkTree(docs: docs, drop: drop, a: a, b: b, secret: secret, taken: taken)
    }

    /// A link made by the server's administrator (`syncfs-mount link create`); its secret.
    static func link(
        _ fixture: ServerFixture, _ order: AccountAdmin.LinkOrder,
        now: @escaping @Sendable () -> Int64 = AccessControl.unixNow
    ) async throws -> (record: LinkRecord, secret: String) {
        try await AccountAdmin(store: try fixture.backend.accessStore(on: fixture.server), now: now).createLink(order)
    }
}

extension ServerFixture {
    /// A link request without a token: `/v1/links/SECRET` + `suffix` (already encoded).
    func link(
        _ secret: String, _ suffix: String = "", method: HTTPMethod = .GET, password: String? = nil,
        body: [UInt8]? = nil
    ) async throws -> Reply {
        let auth: Auth = password.map { .header("Basic " + Data("anyone:\($0)".utf8).base64EncodedString()) } ?? .none
        return try await send(method, "/v1/links/" + secret + suffix, auth: auth, body: body)
    }
}
