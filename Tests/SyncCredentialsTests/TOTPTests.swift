import Testing

@testable import SyncCredentials

@Suite("TOTP")
struct TOTPTests {
    /// RFC 6238 Appendix B's SHA-1 secret, the 20 ASCII bytes "12345678901234567890".
    static let rfcSecret = Base32.encode(Array("12345678901234567890".utf8))

    /// RFC 6238 Appendix B, SHA-1: the time and the last 6 digits of its 8-digit code.
    static let rfcVectors: [(Int64, String)] = [
        (59, "287082"),  // 94287082
        (1_111_111_109, "081804"),  // 07081804
        (1_111_111_111, "050471"),  // 14050471
        (1_234_567_890, "005924"),  // 89005924
        (2_000_000_000, "279037"),  // 69279037
        (20_000_000_000, "353130"),  // 65353130
    ]

    @Test func theRFCSecretIsItsBase32() {
        #expect(Self.rfcSecret == "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")
    }

    @Test(arguments: rfcVectors)
    func makesTheRFCCodes(_ time: Int64, _ expected: String) throws {
        #expect(try TOTP.code(secret: Self.rfcSecret, at: time) == expected)
        #expect(TOTP.verify(code: expected, secret: Self.rfcSecret, at: time, lastAcceptedStep: nil) == time / 30)
    }

    @Test func aCodeIsGoodOnceOnly() throws {
        let time: Int64 = 1_111_111_111
        let code = try TOTP.code(secret: Self.rfcSecret, at: time)
        let step = try #require(TOTP.verify(code: code, secret: Self.rfcSecret, at: time, lastAcceptedStep: nil))
        #expect(step == time / 30)
        #expect(TOTP.verify(code: code, secret: Self.rfcSecret, at: time, lastAcceptedStep: step) == nil)
        #expect(TOTP.verify(code: code, secret: Self.rfcSecret, at: time + 10, lastAcceptedStep: step) == nil)
        // Once a later step was accepted, an earlier step's code is refused even within the window.
        let next = try TOTP.code(secret: Self.rfcSecret, at: time + 30)
        #expect(TOTP.verify(code: next, secret: Self.rfcSecret, at: time, lastAcceptedStep: step) == step + 1)
        #expect(TOTP.verify(code: code, secret: Self.rfcSecret, at: time, lastAcceptedStep: step + 1) == nil)
    }

    @Test(arguments: [-1, 1] as [Int64])
    func aCodeOneStepAwayIsAccepted(_ offset: Int64) throws {
        let time: Int64 = 1_234_567_890
        let code = try TOTP.code(secret: Self.rfcSecret, at: time + offset * 30)
        #expect(TOTP.verify(code: code, secret: Self.rfcSecret, at: time, lastAcceptedStep: nil) == time / 30 + offset)
    }

    @Test(arguments: [-3, -2, 2, 3] as [Int64])
    func aCodeTwoOrMoreStepsAwayIsRefused(_ offset: Int64) throws {
        let time: Int64 = 1_234_567_890
        let code = try TOTP.code(secret: Self.rfcSecret, at: time + offset * 30)
        // The window's own codes differ from it, so a refusal is not a coincidence of digits.
        for near: Int64 in -1...1 {
            #expect(try TOTP.code(secret: Self.rfcSecret, at: time + near * 30) != code)
        }
        #expect(TOTP.verify(code: code, secret: Self.rfcSecret, at: time, lastAcceptedStep: nil) == nil)
    }

    @Test(arguments: ["", "12345", "1234567", "12345a", " 28708", "２８７０８２", "287082\n"])
    func aMalformedCodeIsRefused(_ code: String) {
        #expect(TOTP.verify(code: code, secret: Self.rfcSecret, at: 59, lastAcceptedStep: nil) == nil)
    }

    @Test(arguments: ["", "GEZDGNBVGY3TQOJQ1", "not base32!"])
    func aMalformedSecretIsRefused(_ secret: String) {
        #expect(TOTP.verify(code: "287082", secret: secret, at: 59, lastAcceptedStep: nil) == nil)
        #expect(throws: CredentialError.malformedTOTPSecret) { try TOTP.code(secret: secret, at: 59) }
    }

    @Test func aNewSecretIs160RandomBits() throws {
        let first = TOTP.newSecret()
        let second = TOTP.newSecret()
        #expect(first.count == 32)
        #expect(try #require(Base32.decode(first)).count == 20)
        #expect(first != second)
    }

    @Test func theURINamesTheIssuerAccountAndParameters() {
        let uri = TOTP.otpauthURI(secret: "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", account: "alice@example.org")
        #expect(
            uri == "otpauth://totp/SyncFS:alice%40example.org?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
                + "&issuer=SyncFS&algorithm=SHA1&digits=6&period=30")
        let other = TOTP.otpauthURI(secret: "MZXW6", account: "bob", issuer: "Acme & Co:")
        #expect(other.hasPrefix("otpauth://totp/Acme%20%26%20Co%3A:bob?secret=MZXW6&issuer=Acme%20%26%20Co%3A&"))
    }

    @Test func stepsRoundDown() {
        #expect(TOTP.step(at: 0) == 0)
        #expect(TOTP.step(at: 29) == 0)
        #expect(TOTP.step(at: 30) == 1)
        #expect(TOTP.step(at: -1) == -1)
        #expect(TOTP.step(at: -30) == -1)
        #expect(TOTP.step(at: -31) == -2)
    }
}
