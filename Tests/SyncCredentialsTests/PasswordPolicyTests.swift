import Testing

@testable import SyncCredentials

@Suite("Password policy")
struct PasswordPolicyTests {
    @Test(arguments: ["0123456789", "ten chars!", "😀😀😀😀😀😀😀😀😀😀", String(repeating: "\u{E9}", count: 9) + "\u{301}"])
    func tenScalarsAreEnough(_ password: String) throws {
        try PasswordHash.check(newPassword: password)
    }

    /// Counted in Unicode scalars: nine of them, however many bytes or characters they make.
    @Test(arguments: ["", "012345678", "😀😀😀😀😀😀😀😀😀", "e\u{301}e\u{301}e\u{301}e\u{301}e"])
    func fewerThanTenScalarsAreRefused(_ password: String) {
        #expect(throws: CredentialError.passwordTooShort(minimum: 10)) {
            try PasswordHash.check(newPassword: password)
        }
    }

    @Test func atMost1024BytesAreAccepted() throws {
        try PasswordHash.check(newPassword: String(repeating: "a", count: 1_024))
        try PasswordHash.check(newPassword: String(repeating: "\u{E9}", count: 512))
        #expect(throws: CredentialError.passwordTooLong(maximumBytes: 1_024)) {
            try PasswordHash.check(newPassword: String(repeating: "a", count: 1_025))
        }
        #expect(throws: CredentialError.passwordTooLong(maximumBytes: 1_024)) {
            try PasswordHash.check(newPassword: String(repeating: "\u{E9}", count: 512) + "a")
        }
    }

    @Test func aNulIsRefused() {
        #expect(throws: CredentialError.passwordHasNul) {
            try PasswordHash.check(newPassword: "0123456789\u{0}abc")
        }
    }

    @Test func theMessagesSayWhatToDo() {
        #expect(CredentialError.passwordTooShort(minimum: 10).description.contains("at least 10 characters"))
        #expect(CredentialError.passwordTooLong(maximumBytes: 1_024).description.contains("at most 1024 bytes"))
    }
}
