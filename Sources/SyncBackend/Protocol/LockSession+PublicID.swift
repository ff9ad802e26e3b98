import Crypto

extension LockSession {
    /// What others may see of this session: a one-way function of it (the first 16 bytes of
    /// SHA-256 over `publicIDLabel` followed by the session's hex digits), itself a valid session
    /// in form. A session is a bearer secret — whoever knows it may renew, unlock or release its
    /// locks — so a server answers every lock with its holder's public ID, never its session
    /// (doc/PROTOCOL.md "Locks"). Nobody can renew, unlock or release by a public ID: it is
    /// another session, holding nothing.
    public var publicID: LockSession {
        var hasher = SHA256()
        hasher.update(data: Array((Self.publicIDLabel + hex).utf8))
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in hasher.finalize().prefix(16) { text += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        // 32 lowercase hex digits are a valid session.
        return LockSession(hex: String(decoding: text, as: UTF8.self))!
    }

    /// The fixed prefix of the public ID's hash input; part of the protocol.
    public static let publicIDLabel = "syncfs lock session public id\n"
}
