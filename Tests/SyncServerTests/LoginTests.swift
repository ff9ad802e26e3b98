import Foundation
import SyncBackend
import SyncCredentials
import SyncServer
import TestSupport
import Testing

/// `POST /v1/login` against a password guesser, a replayed code and a curious stranger
/// (doc/SECURITY.md, "Logins"): the same answer for every wrong credential, throttling shared
/// by the server's processes, audit lines for each attempt.
@Suite struct LoginTests {
    static let password = "correct horse battery"

    /// A user `name`, an editor of the fixture's container, with `password`.
    static func user(_ fixture: ServerFixture, _ name: String) async throws -> AccountAdmin {
        let admin = AccountAdmin(store: try fixture.backend.accessStore(on: fixture.server))
        _ = try await admin.addUser(name)
        try await admin.setPassword(name, to: password)
        try await admin.setMember(user: name, container: fixture.name, role: .editor)
        return admin
    }

    static func login(
        _ fixture: ServerFixture, _ user: String, password: String? = LoginTests.password, totp: String? = nil,
        enrolment: String? = nil, newPassword: String? = nil, container: String? = nil
    ) async throws -> Reply {
        try await fixture.send(
            .POST, WireProtocol.Path.login,
            json: LoginRequest(
                user: user, container: container ?? fixture.name, device: "laptop", password: password, totp: totp,
                enrolment: enrolment, newPassword: newPassword), auth: .none)
    }

    @Test(arguments: ServerBackend.allCases) func anEnrolmentCodeSetsThePasswordOnceAndTheTokenWorks(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let admin = AccountAdmin(store: try fixture.backend.accessStore(on: fixture.server))
            let code = try await admin.addUser("nina")
            try await admin.setMember(user: "nina", container: fixture.name, role: .viewer)
            let weak = try await Self.login(fixture, "nina", password: nil, enrolment: code, newPassword: "short")
            #expect(weak.status == 400, "\(weak.text)")
            // The refused attempt did not spend the code (the password policy is checked first).
            let first = try await Self.login(
                fixture, "nina", password: nil, enrolment: code, newPassword: Self.password)
            #expect(first.status == 200, "\(first.text)")
            let grant = try first.decode(LoginGrant.self)
            #expect(grant.role == .viewer && grant.user == "nina" && grant.container == fixture.name)
            let info = try await fixture.send(.GET, fixture.path(), auth: .token(grant.token))
            #expect(try info.decode(ContainerInfo.self).access == .viewer)
            // The code is spent; the password now works.
            let again = try await Self.login(
                fixture, "nina", password: nil, enrolment: code, newPassword: Self.password)
            #expect(again.status == 401)
            #expect(try await Self.login(fixture, "nina").status == 200)
            // The device is listed, and revoking it stops its token.
            let devices = try await admin.devices(user: "nina")
            #expect(devices.count == 2 && devices.allSatisfy { $0.name == "laptop" })
            #expect(try await admin.revokeDevice(grant.device))
            #expect(try await fixture.send(.GET, fixture.path(), auth: .token(grant.token)).status == 401)
        }
    }

    @Test(arguments: ServerBackend.allCases) func everyWrongCredentialGetsTheSameAnswer(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let admin = try await Self.user(fixture, "omar")
            _ = try await admin.addUser("dora")
            try await admin.setPassword("dora", to: Self.password)
            try await admin.setMember(user: "dora", container: fixture.name, role: .editor)
            try await admin.setDisabled("dora", true)
            let wrong = try await Self.login(fixture, "omar", password: "not the password")
            let unknown = try await Self.login(fixture, "nobody", password: "not the password")
            let disabled = try await Self.login(fixture, "dora")
            let noPassword = try await Self.login(fixture, "omar", password: nil)
            for reply in [wrong, unknown, disabled, noPassword] {
                #expect(reply.status == 401 && reply.code == .unauthorized)
                #expect(reply.wireError?.message == wrong.wireError?.message, "\(reply.text)")
            }
            // Right credentials, but not a member of that container: said only now.
            _ = try await fixture.makeContainer("other")
            let stranger = try await Self.login(fixture, "omar", container: "other")
            #expect(stranger.status == 403)
        }
    }

    @Test(arguments: ServerBackend.allCases) func passwordGuessingIsThrottledPerAccountAndAudited(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let admin = try await Self.user(fixture, "pia")
            for guess in 0..<LoginService.accountLimit {
                let reply = try await Self.login(fixture, "pia", password: "guess \(guess)")
                #expect(reply.status == 401)
            }
            // Past the limit even the right password is refused, with a time to come back.
            let throttled = try await Self.login(fixture, "pia")
            #expect(throttled.status == 429 && throttled.code == .tooManyRequests)
            #expect(Int(throttled.headers.first(name: "Retry-After") ?? "") ?? 0 > 0)
            // Another account is not locked out by pia's guesser (the address limit is higher).
            _ = try await Self.user(fixture, "quinn")
            #expect(try await Self.login(fixture, "quinn").status == 200)
            let lines = try await admin.store.audit(container: fixture.name, since: 0, limit: 100)
            let failed = lines.filter { $0.action == AuditAction.loginFailed.rawValue && $0.actor == "user:pia" }
            #expect(failed.count == LoginService.accountLimit + 1)
            #expect(failed.allSatisfy { $0.address == "127.0.0.1" })
            #expect(failed.last?.result == "throttled")
        }
    }

    @Test(arguments: ServerBackend.allCases) func aTOTPCodeIsNeededAndGoodOnce(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let admin = try await Self.user(fixture, "rita")
            let secret = try #require(try await admin.setTOTP("rita", enable: true)).secret
            let asked = try await Self.login(fixture, "rita")
            #expect(asked.status == 401 && asked.text.contains("TOTP"))
            let code = try TOTP.code(secret: secret, at: Int64(Date().timeIntervalSince1970))
            #expect(try await Self.login(fixture, "rita", totp: code).status == 200)
            // The same code again is a replay.
            let replay = try await Self.login(fixture, "rita", totp: code)
            #expect(replay.status == 401 && !replay.text.contains("TOTP"))
            // A wrong password with a right code is the same refusal as any.
            #expect(try await Self.login(fixture, "rita", password: "wrong password", totp: code).status == 401)
        }
    }
}
