import Crypto
import Foundation

/// An epoch secret wrapped to one device: HPKE (RFC 9180) in base mode with DHKEM(X25519,
/// HKDF-SHA256), HKDF-SHA256 and AES-256-GCM, to the device's X25519 key. The HPKE `info` names
/// the container, the epoch and the recipient's signing key, so a wrapped secret opens only for
/// that device, as that epoch of that container. Who wrapped it is vouched for by the ledger entry
/// that published the keyring holding it (signed), not by HPKE.
///
/// Encoded: encapsulated key (32) ‖ ciphertext of the 32-byte secret with its tag (48).
public enum EpochKeyWrap {
    static let suite = HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)
    public static let wrappedBytes = 80

    public static func wrap(
        _ secret: EpochSecret, epoch: KeyEpoch, container: SealedContainerID, to device: DeviceIdentity
    ) -> [UInt8] {
        do {
            var sender = try HPKE.Sender(
                recipientKey: device.agreementKey, ciphersuite: suite,
                info: Data(info(epoch: epoch, container: container, device: device)))
            let sealed = try sender.seal(secret.bytes)
            return Array(sender.encapsulatedKey) + Array(sealed)
        } catch {
            preconditionFailure("HPKE refused a valid X25519 key: \(error)")
        }
    }

    public static func unwrap(
        _ wrapped: [UInt8], epoch: KeyEpoch, container: SealedContainerID, with keys: DeviceKeys
    ) throws(SealedError) -> EpochSecret {
        guard wrapped.count == wrappedBytes else {
            throw .malformed("a wrapped epoch secret of \(wrapped.count) bytes")
        }
        do {
            var recipient = try HPKE.Recipient(
                privateKey: keys.agreement, ciphersuite: suite,
                info: Data(info(epoch: epoch, container: container, device: keys.identity)),
                encapsulatedKey: Data(wrapped.prefix(32)))
            let opened = try recipient.open(Data(wrapped.suffix(48)))
            guard let secret = EpochSecret(bytes: Array(opened)) else { throw SealedError.malformed("an epoch secret") }
            return secret
        } catch {
            throw .notAuthentic("epoch \(epoch)'s secret does not open with this device's key")
        }
    }

    private static func info(epoch: KeyEpoch, container: SealedContainerID, device: DeviceIdentity) -> [UInt8] {
        var info = SealedWriter()
        info.counted(SealedFormat.label("epoch-wrap"))
        info.fixed(container.bytes)
        info.uint32(epoch)
        info.fixed(device.signing)
        return info.bytes
    }
}
