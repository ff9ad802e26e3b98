import CArgon2

/// Passwords stored as Argon2id (RFC 9106) through Debian's libargon2: a memory-hard hash with a
/// random salt per password, kept as the standard encoding `$argon2id$v=19$m=…,t=…,p=…$SALT$HASH`
/// that carries its own parameters, so stored hashes keep verifying when the costs below change.
public enum PasswordHash {
    /// The costs of a new hash: OWASP's minimum for Argon2id (Password Storage Cheat Sheet),
    /// 19 MiB of memory, 2 passes, 1 lane. Measured on the 2-core build machine (Debian 12's
    /// libargon2, the cores busy with other builds), one verify takes 0.03-0.14 s at these
    /// costs, while 64 MiB and 3 passes took 0.24-1.06 s: not well under the 0.5 s a login may
    /// take, on a server that may check several at once, so the stronger setting is not the
    /// default. Each verify holds this much memory while it runs.
    static let memoryKiB: UInt32 = 19_456
    static let iterations: UInt32 = 2
    static let parallelism: UInt32 = 1
    /// A 16-byte random salt and a 32-byte hash (RFC 9106's recommendation).
    static let saltLength = 16
    static let hashLength = 32

    /// The least a new password may have, in Unicode scalars.
    public static let minimumPasswordScalars = 10
    /// The most any password may take, in UTF-8 bytes.
    public static let maximumPasswordBytes = 1_024

    /// The Argon2id encoding of `password` with a fresh salt and the current costs. The password
    /// is not checked against the policy (call `check(newPassword:)` first for one a person
    /// chose); only one longer than `maximumPasswordBytes` is refused.
    public static func make(_ password: String) throws(CredentialError) -> String {
        let passwordBytes = Array(password.utf8)
        guard passwordBytes.count <= maximumPasswordBytes else {
            throw .passwordTooLong(maximumBytes: maximumPasswordBytes)
        }
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<saltLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let encodedLength = argon2_encodedlen(
            iterations, memoryKiB, parallelism, UInt32(saltLength), UInt32(hashLength), Argon2_id)
        var encoded = [CChar](repeating: 0, count: encodedLength)
        let result = argon2id_hash_encoded(
            iterations, memoryKiB, parallelism, passwordBytes, passwordBytes.count, salt, salt.count, hashLength,
            &encoded, encoded.count)
        guard result == ARGON2_OK.rawValue else {
            throw .hashingFailed(code: result, message: String(cString: argon2_error_message(result)))
        }
        return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `password` is the one `encoded` was made from; libargon2 compares the hashes in
    /// constant time. An encoding that is not Argon2id version 19 within the sane bounds
    /// (`Argon2idEncoding`: at most 1 GiB, 20 passes, 8 lanes) is false without reaching the
    /// library, after as long as a real verify takes (`dummyVerify`).
    public static func verify(_ password: String, against encoded: String) -> Bool {
        guard Argon2idEncoding(encoded) != nil else {
            dummyVerify(password)
            return false
        }
        return libraryVerify(password, against: encoded)
    }

    /// Spends as long as `verify` with the current costs, against a hash made once per process,
    /// and answers nothing: for a login to an unknown user, so it takes as long as one to a
    /// known user and the time does not tell which names exist.
    public static func dummyVerify(_ password: String) {
        guard let dummyEncoding else { return }
        _ = libraryVerify(password, against: dummyEncoding)
    }

    /// Whether `encoded` is an Argon2id encoding `verify` would try (the variant, the version,
    /// the costs within bounds, the salt and hash lengths, canonical base64).
    public static func isWellFormed(_ encoded: String) -> Bool {
        Argon2idEncoding(encoded) != nil
    }

    /// Refuses a new password that is shorter than `minimumPasswordScalars` Unicode scalars,
    /// longer than `maximumPasswordBytes` UTF-8 bytes, or holds a NUL.
    public static func check(newPassword: String) throws(CredentialError) {
        if newPassword.utf8.count > maximumPasswordBytes {
            throw .passwordTooLong(maximumBytes: maximumPasswordBytes)
        }
        if newPassword.unicodeScalars.contains("\0") {
            throw .passwordHasNul
        }
        if newPassword.unicodeScalars.count < minimumPasswordScalars {
            throw .passwordTooShort(minimum: minimumPasswordScalars)
        }
    }

    /// The hash `dummyVerify` checks against: a random password's, with the current costs; nil
    /// only if it could not be made (the memory could not be allocated), and then there is no
    /// real verify to match either.
    static let dummyEncoding: String? = {
        var generator = SystemRandomNumberGenerator()
        let password = (0..<32).map { _ in String(UInt8.random(in: 0...15, using: &generator), radix: 16) }.joined()
        do {
            return try make(password)
        } catch {
            return nil
        }
    }()

    private static func libraryVerify(_ password: String, against encoded: String) -> Bool {
        let passwordBytes = Array(password.utf8)
        return argon2id_verify(encoded, passwordBytes, passwordBytes.count) == ARGON2_OK.rawValue
    }
}
