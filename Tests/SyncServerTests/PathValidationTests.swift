import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// Container names, hashes and IDs in paths; unknown routes and methods. Every refusal is the
/// protocol's JSON error, and no request creates anything under the root.
@Suite struct PathValidationTests {
    @Test(arguments: ServerBackend.allCases) func invalidContainerNamesAre400AndCreateNothing(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let before = try await fixture.backend.inventory()
            let names = ["..", ".", ".x", "a%2Fb", "a%00b", "%2e%2e", String(repeating: "a", count: 65), "a b", "é"]
            for name in names {
                let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name
                for suffix in ["", "/commits", "/changes"] {
                    let method: HTTPMethod = suffix == "/commits" ? .POST : .GET
                    let reply = try await fixture.send(
                        method, "/v1/containers/\(encoded)\(suffix)",
                        body: suffix == "/commits" ? Array("{}".utf8) : nil)
                    #expect(reply.status == 400, "\(name)\(suffix): \(reply.status) \(reply.text)")
                    #expect(reply.code == .invalidRequest, "\(name)\(suffix)")
                }
            }
            let after = try await fixture.backend.inventory()
            #expect(before == after)
        }
    }

    @Test(arguments: ServerBackend.allCases) func aValidNameWithoutAContainerIs404AndIsNotCreated(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let before = try await fixture.backend.inventory()
            let (_, token) = try await fixture.createToken(container: "ghost", label: "")
            // An empty directory of that name is not a container either.
            try FileManager.default.createDirectory(
                atPath: fixture.server.root + "/empty", withIntermediateDirectories: false)
            let (_, emptyToken) = try await fixture.createToken(container: "empty", label: "")
            for (name, token) in [("ghost", token), ("empty", emptyToken)] {
                let reply = try await fixture.send(
                    .POST, WireProtocol.Path.commits(name), json: Sample.create(Sample.directory("x")),
                    auth: .token(token))
                #expect(reply.status == 404)
                #expect(reply.code == .notFound)
            }
            #expect(!FileManager.default.fileExists(atPath: fixture.server.root + "/ghost"))
            // Nothing was made in the backend (a directory, or a container row) but the empty directory.
            #expect(try await fixture.backend.inventory() == (before + ["empty"]).sorted { $0 < $1 })
            #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.server.root + "/empty").isEmpty)
        }
    }

    @Test(arguments: ServerBackend.allCases) func badHashesAndIDsAre400(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(100))
            let badHashes = [
                chunk.hash.hex.uppercased(), String(chunk.hash.hex.dropLast()), chunk.hash.hex + "0",
                String(repeating: "g", count: 64), "missing2",
            ]
            for hash in badHashes {
                let get = try await fixture.send(.GET, fixture.path("/chunks/\(hash)"))
                #expect(get.status == 400, "GET \(hash)")
                #expect(get.code == .invalidRequest)
                let put = try await fixture.send(
                    .PUT, fixture.path("/chunks/\(hash)"),
                    headers: [(WireProtocol.chunkEncodingHeader, "raw"), (WireProtocol.plainLengthHeader, "100")],
                    body: chunk.payload)
                #expect(put.status == 400, "PUT \(hash)")
            }
            let id = FileID.random().hex
            for bad in [id.uppercased(), String(id.dropLast()), id + "0", String(repeating: "z", count: 32)] {
                let reply = try await fixture.send(.GET, fixture.path("/entries/\(bad)"))
                #expect(reply.status == 400, "\(bad)")
                #expect(reply.code == .invalidRequest)
            }
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.missingChunks([chunk.hash])
                }
                    == [chunk.hash])
        }
    }

    @Test(arguments: ServerBackend.allCases) func unknownRoutesAre404AndWrongMethods405WithJSON(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            for path in ["/v1", "/v1/nothing", fixture.path("/nothing"), fixture.path("/chunks"), "/v1/containers"] {
                let reply = try await fixture.send(.GET, path)
                #expect(reply.status == 404, "\(path)")
                #expect(reply.code == .notFound, "\(path): \(reply.text)")
            }
            // Every other path is the web page's: a page, never the protocol's JSON.
            for path in ["/", "/v2/health"] {
                let reply = try await fixture.send(.GET, path)
                #expect(reply.code == nil, "\(path): \(reply.text)")
                #expect(reply.headers.first(name: "Content-Security-Policy") != nil, "\(path)")
            }
            let wrong: [(HTTPMethod, String, String)] = [
                (.DELETE, fixture.path(), "GET"), (.POST, fixture.path("/changes"), "GET"),
                (.GET, fixture.path("/commits"), "POST"),
                (.PUT, fixture.path("/entries/\(FileID.random().hex)"), "GET"),
                (.DELETE, fixture.path("/chunks/\(String(repeating: "a", count: 64))"), "PUT, GET"),
                (.POST, WireProtocol.Path.health, "GET"),
            ]
            for (method, path, allowed) in wrong {
                let reply = try await fixture.send(method, path)
                #expect(reply.status == 405, "\(method) \(path)")
                #expect(reply.code == .methodNotAllowed, "\(method) \(path)")
                #expect(reply.headers.first(name: "Allow") == allowed, "\(method) \(path)")
            }
        }
    }
}
