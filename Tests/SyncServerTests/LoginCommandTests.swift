import AsyncHTTPClient
import Foundation
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// `syncfs-mount user add`, `member add`, `login`, `user disable` and `audit` as an administrator
/// and a user run them against a running `serve`: the token file is private, works at once, and
/// stops with its user.
@Suite struct LoginCommandTests {
    @Test func aUserEnrolsWithTheCodeAndTheTokenFileIsPrivate() async throws {
        let directory = try TemporaryDirectory("syncfs-login")
        defer { directory.remove() }
        let root = directory.path + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        #expect(try Binary.run(["token", "create", "--root", root, "--container", "docs"]).status == 0)
        let added = try Binary.run(["user", "add", "--root", root, "alice"])
        #expect(added.status == 0, "\(added.stderr)")
        let code = added.stdout.trimmingCharacters(in: .newlines)
        #expect(code.hasPrefix("enr_") && added.stdout == code + "\n", "stdout must hold the code alone")
        let member = try Binary.run([
            "member", "add", "--root", root, "--user", "alice", "--container", "docs", "--role", "editor",
        ])
        #expect(member.status == 0, "\(member.stderr)")
        let codeFile = directory.path + "/code"
        let passwordFile = directory.path + "/password"
        try Data((code + "\n").utf8).write(to: URL(fileURLWithPath: codeFile))
        try Data("correct horse battery\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
        // A secret file others can read is refused (65), and nothing is asked for.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: codeFile)
        let open = try Binary.run([
            "login", "http://127.0.0.1:1/docs", "--user", "alice", "--enrolment-code-file", codeFile,
            "--new-password-file", passwordFile, "--token-file", directory.path + "/never.token",
        ])
        #expect(open.status == 65 && open.stderr.contains("chmod 600"), "\(open.stderr)")
        for file in [codeFile, passwordFile] {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
        // A password never goes over plain HTTP to another machine.
        let plain = try Binary.run(["login", "http://sync.example.org/docs", "--user", "alice"])
        #expect(plain.status == 64 && plain.stderr.contains("https://"), "\(plain.stderr)")
        let tokenFile = directory.path + "/config/docs.token"

        let server = try ServeProcess.start(root: root)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let url = "http://127.0.0.1:\(server.port)/docs"
            let login = try Binary.run([
                "login", url, "--user", "alice", "--device", "test laptop", "--enrolment-code-file", codeFile,
                "--new-password-file", passwordFile, "--token-file", tokenFile,
            ])
            #expect(login.status == 0, "\(login.stderr)")
            #expect(login.stderr.contains("in 'docs'"), "\(login.stderr)")
            let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .newlines)
            let info = "http://127.0.0.1:\(server.port)" + WireProtocol.Path.container("docs")
            #expect(try await Self.get(info, token: token, client).status == 200)

            // A wrong password: a refusal (65) that says so, and nothing written.
            try Data("wrong password here\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile)
            let wrong = try Binary.run([
                "login", url, "--user", "alice", "--password-file", passwordFile, "--token-file",
                directory.path + "/other.token",
            ])
            #expect(wrong.status == 65 && wrong.stderr.contains("refused"), "\(wrong.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.path + "/other.token"))

            // Disabling the user stops the device's token at once.
            #expect(try Binary.run(["user", "disable", "--root", root, "alice"]).status == 0)
            #expect(try await Self.get(info, token: token, client).status == 401)
            let audit = try Binary.run(["audit", "--root", root, "--json"])
            #expect(audit.status == 0)
            let actions = audit.stdout.split(separator: "\n").compactMap {
                (try? JSONDecoder().decode(AuditRecord.self, from: Data($0.utf8)))?.action
            }
            for action in ["user-add", "role-change", "login", "login-failed", "user-disable"] {
                #expect(actions.contains(action), "\(action) not in \(actions)")
            }
        } catch {
            Issue.record("\(error)")
        }
        try? await client.shutdown()
        #expect(server.stop() == 0, "serve did not exit 0 after SIGTERM; log:\n\(server.log)")
    }

    private static func get(_ url: String, token: String, _ client: HTTPClient) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        return try await ServerFixture.execute(client, request, timeout: .seconds(30))
    }
}
