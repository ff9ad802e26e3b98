import Crypto
import Foundation

/// The recovery key: 32 random bytes shown once when a sealed container is made, for its owner to
/// write down. It acts as one more member device whose keys are derived from it (HKDF-SHA256,
/// salt `syncfs-sealed-v1 recovery`, info `signing` / `agreement`): every epoch secret is wrapped
/// to it, and the container's genesis names its public keys, so a device that holds it can check
/// that it joins the right container, unwrap every epoch and sign its own admission.
///
/// Text form: `SFR1-` and 55 characters of RFC 4648 base32 (no padding) in groups of four, encoding the 32
/// bytes and a 2-byte SHA-256 checksum (so a typo is caught before any use). Reading accepts
/// lower case, spaces and dashes anywhere.
public struct RecoveryKey: Sendable {
    let secret: [UInt8]

    public static func generate() -> RecoveryKey {
        RecoveryKey(secret: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    init(secret: [UInt8]) { self.secret = secret }

    /// The keys of the recovery "device".
    public var deviceKeys: DeviceKeys {
        let master = SymmetricKey(data: secret)
        func derive(_ info: String) -> [UInt8] {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: master, salt: SealedFormat.label("recovery"), info: Array(info.utf8),
                outputByteCount: 32
            ).withUnsafeBytes { Array($0) }
        }
        do {
            return DeviceKeys(
                signing: try Curve25519.Signing.PrivateKey(rawRepresentation: derive("signing")),
                agreement: try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: derive("agreement")))
        } catch {
            preconditionFailure("a 32-byte Curve25519 key was refused: \(error)")
        }
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
    private static let prefix = "SFR1-"

    public var text: String {
        let checksum = Array(SHA256.hash(data: secret).prefix(2))
        let digits = Self.base32(secret + checksum)
        var groups: [String] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let end = digits.index(index, offsetBy: 4, limitedBy: digits.endIndex) ?? digits.endIndex
            groups.append(String(decoding: digits[index..<end], as: UTF8.self))
            index = end
        }
        return Self.prefix + groups.joined(separator: "-")
    }

    /// Reads the text form; nil for anything else (a wrong prefix, a character outside base32, a
    /// wrong length or checksum).
    public init?(text: String) {
        var body = text.uppercased().filter { !$0.isWhitespace && $0 != "-" }
        guard body.hasPrefix("SFR1") else { return nil }
        body.removeFirst(4)
        guard let bytes = Self.unbase32(Array(body.utf8)), bytes.count == 34 else { return nil }
        let secret = Array(bytes.prefix(32))
        guard Array(SHA256.hash(data: secret).prefix(2)) == Array(bytes.suffix(2)) else { return nil }
        self.secret = secret
    }

    private static func base32(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return out
    }

    private static func unbase32(_ digits: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for digit in digits {
            guard let value = alphabet.firstIndex(of: digit) else { return nil }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
                bits -= 8
            }
        }
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
