import Foundation
import Testing

@testable import SyncCredentials

@Suite("Password hashes")
struct PasswordHashTests {
    static let password = "correct horse battery staple"

    /// Made by libargon2's reference implementation from `password` (m=4096, t=1, p=1, the salt
    /// bytes 0x40...0x4F), one per variant: each verifies with its own variant's function.
    static let referenceArgon2id =
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs"
    static let referenceArgon2i =
        "$argon2i$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$tJxNdK5xAMryCBuT8ve/5YYHOljLDlEaTWdtQNUgxss"
    static let referenceArgon2d =
        "$argon2d$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$TbmZTfJHmEoHD2Ho7R1SFgXlg2fSLwqSvGRA6PU8nsw"

    @Test func aHashVerifiesItsPasswordOnly() throws {
        let encoded = try PasswordHash.make(Self.password)
        #expect(PasswordHash.verify(Self.password, against: encoded))
        #expect(!PasswordHash.verify("correct horse battery stapl", against: encoded))
        #expect(!PasswordHash.verify("Correct horse battery staple", against: encoded))
        #expect(!PasswordHash.verify("", against: encoded))
    }

    @Test func aNewHashHasTheCurrentCostsAndTheStandardEncoding() throws {
        let encoded = try PasswordHash.make(Self.password)
        #expect(encoded.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        let parts = try #require(Argon2idEncoding(encoded))
        #expect(parts.memoryKiB == PasswordHash.memoryKiB)
        #expect(parts.iterations == PasswordHash.iterations)
        #expect(parts.parallelism == PasswordHash.parallelism)
        #expect(parts.saltLength == 16)
        #expect(parts.hashLength == 32)
        #expect(PasswordHash.isWellFormed(encoded))
    }

    @Test func twoHashesOfOnePasswordDifferInTheirSalt() throws {
        let first = try PasswordHash.make(Self.password)
        let second = try PasswordHash.make(Self.password)
        #expect(first != second)
        #expect(first.split(separator: "$")[3] != second.split(separator: "$")[3])
        #expect(PasswordHash.verify(Self.password, against: first))
        #expect(PasswordHash.verify(Self.password, against: second))
    }

    @Test func aHashFromTheReferenceImplementationVerifies() {
        #expect(PasswordHash.isWellFormed(Self.referenceArgon2id))
        #expect(PasswordHash.verify(Self.password, against: Self.referenceArgon2id))
        #expect(!PasswordHash.verify("wrong", against: Self.referenceArgon2id))
    }

    @Test(arguments: [referenceArgon2i, referenceArgon2d])
    func otherArgon2VariantsAreRefusedEvenWithTheRightPassword(_ encoded: String) {
        #expect(!PasswordHash.isWellFormed(encoded))
        #expect(!PasswordHash.verify(Self.password, against: encoded))
    }

    /// Each a change of the reference Argon2id encoding that still parses: the hash, the salt,
    /// a cost.
    static let tampered = [
        replacingLast("TucTAs", with: "TucTBs", in: referenceArgon2id),
        replacingLast("$QCB2", with: "$RCB2", in: referenceArgon2id),
        replacingLast("QEFCQ0RF", with: "QEFCQ0RG", in: referenceArgon2id),
        replacingLast("m=4096", with: "m=4097", in: referenceArgon2id),
        replacingLast("t=1", with: "t=2", in: referenceArgon2id),
    ]

    @Test(arguments: tampered)
    func aTamperedEncodingDoesNotVerify(_ encoded: String) {
        #expect(encoded != Self.referenceArgon2id)
        #expect(PasswordHash.isWellFormed(encoded))
        #expect(!PasswordHash.verify(Self.password, against: encoded))
    }

    static let malformed = [
        "",
        "argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=16$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs$",
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw",
        "$argon2id$v=19$t=1,m=4096,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=4096,t=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=04096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=+4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw==$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTx$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j_4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRg$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfms",
        "$ARGON2ID$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs",
        "$argon2id$v=19$m=4096,t=1,p=1$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs\u{0}",
    ]

    @Test(arguments: malformed)
    func aMalformedEncodingIsRefused(_ encoded: String) {
        #expect(!PasswordHash.isWellFormed(encoded))
        #expect(!PasswordHash.verify(Self.password, against: encoded))
    }

    /// The bounds are checked by the parser, before anything reaches libargon2: costs past them
    /// are never parsed (so never hashed with), costs at them are.
    @Test func costsBeyondTheBoundsAreRefusedByTheParser() {
        func encoding(m: String, t: String, p: String) -> String {
            "$argon2id$v=19$m=\(m),t=\(t),p=\(p)$QEFCQ0RFRkdISUpLTE1OTw$QCB2XKcOPkL3qzbyfmsVRXbFp2j/4MVT+R+J/TucTAs"
        }
        let atTheBounds = Argon2idEncoding(encoding(m: "1048576", t: "20", p: "8"))
        #expect(atTheBounds?.memoryKiB == 1 << 20)
        #expect(atTheBounds?.iterations == 20)
        #expect(atTheBounds?.parallelism == 8)
        #expect(Argon2idEncoding(encoding(m: "8", t: "1", p: "1"))?.memoryKiB == 8)
        let beyond = [
            encoding(m: "1048577", t: "1", p: "1"),
            encoding(m: "4294967295", t: "1", p: "1"),
            encoding(m: "4294967296", t: "1", p: "1"),
            encoding(m: "99999999999999999999", t: "1", p: "1"),
            encoding(m: "4096", t: "21", p: "1"),
            encoding(m: "4096", t: "4294967295", p: "1"),
            encoding(m: "4096", t: "1", p: "9"),
            encoding(m: "4096", t: "1", p: "16777215"),
            encoding(m: "4096", t: "0", p: "1"),
            encoding(m: "4096", t: "1", p: "0"),
            encoding(m: "7", t: "1", p: "1"),
            encoding(m: "63", t: "1", p: "8"),
        ]
        for encoded in beyond {
            #expect(Argon2idEncoding(encoded) == nil, "\(encoded)")
            #expect(!PasswordHash.isWellFormed(encoded))
        }
    }

    @Test func theDummyHashHasTheCurrentCosts() throws {
        let dummy = try #require(PasswordHash.dummyEncoding)
        let parts = try #require(Argon2idEncoding(dummy))
        #expect(parts.memoryKiB == PasswordHash.memoryKiB)
        #expect(parts.iterations == PasswordHash.iterations)
        #expect(parts.parallelism == PasswordHash.parallelism)
        PasswordHash.dummyVerify(Self.password)
    }

    @Test func aPasswordLongerThanTheLimitIsNotHashed() {
        let long = String(repeating: "a", count: PasswordHash.maximumPasswordBytes + 1)
        #expect(throws: CredentialError.passwordTooLong(maximumBytes: 1_024)) { try PasswordHash.make(long) }
    }
}

/// `text` with the last occurrence of `target` replaced.
private func replacingLast(_ target: String, with replacement: String, in text: String) -> String {
    guard let range = text.range(of: target, options: .backwards) else { return text }
    return text.replacingCharacters(in: range, with: replacement)
}
