import Crypto

/// Time-based one-time passwords (RFC 6238) as authenticator apps make them by default:
/// HMAC-SHA1, 6 digits, a new code every 30 seconds. Secrets are kept and shown as base32.
public enum TOTP {
    public static let digits = 6
    /// Seconds per time step.
    public static let period: Int64 = 30
    /// Steps accepted either side of the current one: a code from the previous or next 30 s
    /// still counts, for clocks that are a little apart and codes typed near a step's end.
    public static let window: Int64 = 1
    /// 160 bits, the length RFC 4226 recommends and HMAC-SHA1's block fits.
    static let secretLength = 20

    /// A new random secret, base32 without padding (32 characters).
    public static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base32.encode((0..<secretLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The code for `secret` (base32) at `time` (Unix seconds).
    public static func code(secret: String, at time: Int64) throws(CredentialError) -> String {
        guard let key = Base32.decode(secret), !key.isEmpty else { throw .malformedTOTPSecret }
        return code(key: key, step: step(at: time))
    }

    /// The time step `code` was made for, when it is the code of `secret` for a step within
    /// `window` of `time`'s and later than `lastAcceptedStep`; nil otherwise (a wrong or
    /// malformed code, a malformed secret, or a code used before: replay). Store the answer as
    /// the new `lastAcceptedStep`. Every candidate is computed and compared in constant time,
    /// whatever matches.
    public static func verify(code: String, secret: String, at time: Int64, lastAcceptedStep: Int64?) -> Int64? {
        let given = Array(code.utf8)
        guard given.count == digits, given.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let key = Base32.decode(secret), !key.isEmpty
        else { return nil }
        let current = step(at: time)
        var accepted: Int64?
        for candidate in (current - window)...(current + window) where candidate >= 0 {
            let matches = constantTimeEquals(Array(self.code(key: key, step: candidate).utf8), given)
            if matches && candidate > (lastAcceptedStep ?? -1) {
                accepted = candidate
            }
        }
        return accepted
    }

    /// The `otpauth://` URI authenticator apps import (usually as a QR code): the label
    /// `ISSUER:ACCOUNT`, the secret, the issuer, and this algorithm, digit count and period.
    public static func otpauthURI(secret: String, account: String, issuer: String = "SyncFS") -> String {
        let label = percentEncoded(issuer) + ":" + percentEncoded(account)
        return "otpauth://totp/\(label)?secret=\(percentEncoded(secret))&issuer=\(percentEncoded(issuer))"
            + "&algorithm=SHA1&digits=\(digits)&period=\(period)"
    }

    /// The time step of `time`: whole periods since the Unix epoch (rounded down).
    static func step(at time: Int64) -> Int64 {
        time / period - (time % period < 0 ? 1 : 0)
    }

    /// HOTP (RFC 4226 section 5.3) of `key` with the step as the counter: HMAC-SHA1 of the
    /// counter's 8 big-endian bytes, dynamically truncated to 31 bits, its last `digits` digits.
    static func code(key: [UInt8], step: Int64) -> String {
        let counter = withUnsafeBytes(of: UInt64(bitPattern: step).bigEndian) { Array($0) }
        let mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: counter, using: SymmetricKey(data: key)))
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let truncated =
            UInt32(mac[offset] & 0x7F) << 24 | UInt32(mac[offset + 1]) << 16 | UInt32(mac[offset + 2]) << 8
            | UInt32(mac[offset + 3])
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let number = String(truncated % modulus)
        return String(repeating: "0", count: digits - number.count) + number
    }

    /// `text` with every byte but RFC 3986's unreserved characters percent-encoded.
    private static func percentEncoded(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            let unreserved =
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || Array("-._~".utf8).contains(byte)
            if unreserved {
                output.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }
}
