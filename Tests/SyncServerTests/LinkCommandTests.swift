import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// `syncfs-mount link create|list|revoke` against a running `serve`: the secret is printed once
/// and alone, never listed; the link works at once and stops at once.
@Suite struct LinkCommandTests {
    @Test func aLinkMadeOnTheCommandLineWorksAtOnceAndStopsWhenRevoked() async throws {
        let directory = try TemporaryDirectory("syncfs-links")
        defer { directory.remove() }
        let root = directory.path + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        #expect(try Binary.run(["token", "create", "--root", root, "--container", "docs"]).status == 0)
        let passwordFile = directory.path + "/password"
        try Data("a long shared secret\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile)

        let drop = try Binary.run([
            "link", "create", "--root", root, "--container", "docs", "--kind", "upload-only", "--password-file",
            passwordFile, "--label", "scans", "--server", "https://files.example.org/",
        ])
        #expect(drop.status == 0, "\(drop.stderr)")
        let dropURL = drop.stdout.trimmingCharacters(in: .newlines)
        #expect(dropURL.hasPrefix("https://files.example.org/v1/links/lnk_") && drop.stdout == dropURL + "\n")
        let view = try Binary.run(["link", "create", "--root", root, "--container", "docs", "--kind", "view"])
        let viewPath = view.stdout.trimmingCharacters(in: .newlines)
        #expect(view.status == 0 && viewPath.hasPrefix("/v1/links/lnk_"), "\(view.stderr)")
        let refused = try Binary.run([
            "link", "create", "--root", root, "--container", "docs", "--path", "../etc", "--kind", "view",
        ])
        #expect(refused.status == 65 && refused.stderr.contains(".."), "\(refused.stderr)")
        let noFile = try Binary.run(["link", "create", "--root", root, "--container", "docs", "--kind", "download"])
        #expect(noFile.status == 65, "a download link names one file: \(noFile.stderr)")

        let listed = try Binary.run(["link", "list", "--root", root, "--json"])
        #expect(listed.status == 0)
        let links = try JSONDecoder().decode([LinkSummary].self, from: Data(listed.stdout.utf8))
        #expect(links.map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.uploadOnly, .view])
        let dropLink = try #require(links.first { $0.kind == .uploadOnly })
        let viewLink = try #require(links.first { $0.kind == .view })
        #expect(dropLink.hasPassword && dropLink.label == "scans" && dropLink.expires != nil)
        #expect(!viewLink.hasPassword)
        #expect(!listed.stdout.contains("lnk_") && !listed.stdout.contains("argon2"), "no secret, no hash")

        let server = try ServeProcess.start(root: root)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let base = "http://127.0.0.1:\(server.port)"
            let dropPath = String(dropURL.dropFirst("https://files.example.org".count))
            let scan = Array("a scanned page".utf8)
            let basic = "Basic " + Data(":a long shared secret".utf8).base64EncodedString()
            let upload = try await Self.send(
                .POST, base + dropPath + "/upload?name=scan.pdf", authorization: basic, body: scan, client)
            #expect(upload.status == 201, "\(upload.text)")
            let noPassword = try await Self.send(.POST, base + dropPath + "/upload?name=x", body: scan, client)
            #expect(noPassword.status == 401)

            let listing = try await Self.send(.GET, base + viewPath + "/list", client)
            #expect(try listing.decode(LinkListing.self).entries.map(\.name) == ["scan.pdf"])
            let content = try await Self.send(.GET, base + viewPath + "/content?path=scan.pdf", client)
            #expect(content.body == scan)

            #expect(try Binary.run(["link", "revoke", "--root", root, viewLink.id]).status == 0)
            #expect(try await Self.send(.GET, base + viewPath + "/list", client).status == 404)
            let again = try Binary.run(["link", "revoke", "--root", root, viewLink.id])
            #expect(again.status == 0 && again.stderr.contains("already"))
            #expect(try Binary.run(["link", "revoke", "--root", root, "00000000"]).status == 65)
            let text = try Binary.run(["link", "list", "--root", root, "--container", "docs"])
            #expect(text.stdout.contains("revoked") && text.stdout.contains("upload-only"), "\(text.stdout)")
        } catch {
            Issue.record("\(error)")
        }
        try? await client.shutdown()
        #expect(server.stop() == 0, "serve did not exit 0 after SIGTERM; log:\n\(server.log)")
    }

    private static func send(
        _ method: HTTPMethod, _ url: String, authorization: String? = nil, body: [UInt8]? = nil,
        _ client: HTTPClient
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        return try await ServerFixture.execute(client, request, timeout: .seconds(30))
    }
}
