import Crypto
import Foundation

/// A device's public keys: what other members know of it. Its identity is the pair; the signing
/// key alone names it in ledger entries.
public struct DeviceIdentity: Hashable, Sendable, CustomStringConvertible {
    /// Ed25519: signs this device's ledger entries.
    public let signing: [UInt8]
    /// X25519: epoch secrets are wrapped to it (HPKE).
    public let agreement: [UInt8]

    let signingKey: Curve25519.Signing.PublicKey
    let agreementKey: Curve25519.KeyAgreement.PublicKey

    /// Nil unless both are 32-byte keys of their curves.
    public init?(signing: [UInt8], agreement: [UInt8]) {
        guard signing.count == 32, agreement.count == 32 else { return nil }
        do {
            signingKey = try Curve25519.Signing.PublicKey(rawRepresentation: signing)
            agreementKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: agreement)
        } catch {
            return nil
        }
        self.signing = signing
        self.agreement = agreement
    }

    public static func == (a: DeviceIdentity, b: DeviceIdentity) -> Bool {
        a.signing == b.signing && a.agreement == b.agreement
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(signing)
        hasher.combine(agreement)
    }

    /// The signing key in hex (64 digits).
    public var signingHex: String { Hex.string(signing) }

    /// The first 16 hex digits of the signing key: a short name for logs and lists (not a
    /// fingerprint to compare: that is `SafetyCode`).
    public var description: String { String(Hex.string(signing).prefix(16)) }
}

/// A device's private keys, made on the device and never sent anywhere: an Ed25519 key that signs
/// its ledger entries and an X25519 key that epoch secrets are wrapped to.
///
/// `encoded` is the form kept on disk (in a 0600 file of the mount's state directory):
/// `syncfs-device-key-v1` ‖ signing seed (32) ‖ agreement key (32).
public struct DeviceKeys: Sendable {
    let signing: Curve25519.Signing.PrivateKey
    let agreement: Curve25519.KeyAgreement.PrivateKey

    public static func generate() -> DeviceKeys {
        DeviceKeys(signing: Curve25519.Signing.PrivateKey(), agreement: Curve25519.KeyAgreement.PrivateKey())
    }

    init(signing: Curve25519.Signing.PrivateKey, agreement: Curve25519.KeyAgreement.PrivateKey) {
        self.signing = signing
        self.agreement = agreement
    }

    public var identity: DeviceIdentity {
        DeviceIdentity(
            signing: Array(signing.publicKey.rawRepresentation), agreement: Array(agreement.publicKey.rawRepresentation)
        )!
    }

    private static let fileLabel = Array("syncfs-device-key-v1".utf8)

    public var encoded: [UInt8] {
        Self.fileLabel + Array(signing.rawRepresentation) + Array(agreement.rawRepresentation)
    }

    public init(encoded: [UInt8]) throws(SealedError) {
        let label = Self.fileLabel
        guard encoded.count == label.count + 64, Array(encoded.prefix(label.count)) == label else {
            throw .malformed("not a device key file of this version")
        }
        do {
            signing = try Curve25519.Signing.PrivateKey(rawRepresentation: encoded[label.count..<label.count + 32])
            agreement = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: encoded[(label.count + 32)...])
        } catch {
            throw .malformed("the device key file's keys")
        }
    }

    func sign(_ message: [UInt8]) -> [UInt8] {
        do {
            return Array(try signing.signature(for: message))
        } catch {
            preconditionFailure("Ed25519 signing failed: \(error)")
        }
    }
}

/// The short code two devices show so that their owner can compare them before one approves the
/// other: 30 digits in six groups of five, from SHA-256 over the container's genesis digest and
/// the joining device's public keys. If the server showed either device anything else (another
/// container, a substituted key), the codes differ. Six groups of 40 bits each reduced modulo
/// 100,000 keep about 99 bits: a server cannot search for a key that matches.
public enum SafetyCode {
    public static func code(genesis: [UInt8], device: DeviceIdentity) -> String {
        var input = SealedWriter()
        input.counted(SealedFormat.label("safety-code"))
        input.fixed(genesis)
        input.fixed(device.signing)
        input.fixed(device.agreement)
        return groups(Array(SHA256.hash(data: input.bytes)), count: 6)
    }

    /// The code the approving device shows for the ledger entry that admitted a device (`admission`,
    /// its digest), which the admitted device's owner types at its first mount as a member: four
    /// groups of five digits, from SHA-256 of the label `syncfs-sealed-v1 admission-code` and the
    /// entry's digest. The entry is public, so the code is no secret: what it proves is which
    /// entry the owner saw approved. A server that shows the new device another admission (a
    /// removed member's, on an old copy of the container) would have to make a member sign an
    /// entry with the same code, about 2^66 tries.
    public static func admissionCode(admission digest: [UInt8]) -> String {
        var input = SealedWriter()
        input.counted(SealedFormat.label("admission-code"))
        input.fixed(digest)
        return groups(Array(SHA256.hash(data: input.bytes)), count: 4)
    }

    /// Whether `typed` names `code` (digits only are compared: groups, spaces and dashes are free).
    public static func matches(_ typed: String, _ code: String) -> Bool {
        typed.filter(\.isNumber) == code.filter(\.isNumber)
    }

    private static func groups(_ digest: [UInt8], count: Int) -> String {
        (0..<count).map { group in
            let value = digest[group * 5..<group * 5 + 5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100_000
            let digits = String(value)
            return String(repeating: "0", count: 5 - digits.count) + digits
        }.joined(separator: " ")
    }
}
