/// Why a password or a TOTP secret was refused, or could not be hashed. The description is
/// written for the person who typed the password or runs the server, and never holds a secret.
public enum CredentialError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The new password has fewer Unicode scalars than `PasswordHash.minimumPasswordScalars`.
    case passwordTooShort(minimum: Int)
    /// The password takes more UTF-8 bytes than `PasswordHash.maximumPasswordBytes`.
    case passwordTooLong(maximumBytes: Int)
    /// The password holds a NUL character.
    case passwordHasNul
    /// The TOTP secret is not base32 (RFC 4648: A-Z and 2-7) or decodes to no bytes.
    case malformedTOTPSecret
    /// libargon2 failed (its code and message), e.g. when the memory cannot be allocated.
    case hashingFailed(code: Int32, message: String)

    public var description: String {
        switch self {
        case .passwordTooShort(let minimum):
            return "the password is too short: use at least \(minimum) characters"
        case .passwordTooLong(let maximumBytes):
            return "the password is too long: use at most \(maximumBytes) bytes"
        case .passwordHasNul:
            return "the password may not contain a NUL character"
        case .malformedTOTPSecret:
            return "the TOTP secret is not valid base32 (letters A-Z and digits 2-7)"
        case .hashingFailed(let code, let message):
            return "the password could not be hashed (Argon2 error \(code): \(message))"
        }
    }
}
