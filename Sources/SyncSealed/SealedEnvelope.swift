import Crypto
import Foundation

/// The envelope around every encrypted object: `version (1) ‖ epoch (4) ‖ nonce (12) ‖
/// AES-256-GCM ciphertext ‖ tag (16)`. The version and epoch are in the clear (a reader needs
/// them to pick its key) and authenticated: the associated data is the object kind's label ‖
/// container ID ‖ version ‖ epoch ‖ the object's name (a chunk's ID, an entry's file ID). So an
/// envelope opens only as the object it was made for, in its container, at its epoch and version:
/// a server that swaps, moves or relabels one is caught by the tag.
///
/// Nonces are 96 random bits from the system generator, fresh for every envelope; NIST SP
/// 800-38D bounds one key to 2^32 such envelopes, and each epoch's key seals one kind of object
/// (doc/CRYPTO.md, "Nonces").
enum SealedEnvelope {
    static let overhead = 1 + 4 + SealedFormat.nonceBytes + SealedFormat.tagBytes

    static func seal(
        _ plaintext: [UInt8], kind: String, name: [UInt8], key: SymmetricKey, keys: EpochKeys
    ) -> [UInt8] {
        seal(plaintext, kind: kind, name: name, key: key, keys: keys, nonce: AES.GCM.Nonce())
    }

    /// `seal` with a given nonce: for known-answer tests only.
    static func seal(
        _ plaintext: [UInt8], kind: String, name: [UInt8], key: SymmetricKey, keys: EpochKeys, nonce: AES.GCM.Nonce
    ) -> [UInt8] {
        let aad = associatedData(kind: kind, name: name, keys: keys, version: SealedFormat.version)
        let box: AES.GCM.SealedBox
        do {
            box = try AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: aad)
        } catch {
            // AES.GCM.seal fails only for a nonce of the wrong size, which AES.GCM.Nonce cannot be.
            preconditionFailure("AES-GCM refused a well-formed nonce: \(error)")
        }
        var out = SealedWriter(capacity: plaintext.count + overhead)
        out.byte(SealedFormat.version)
        out.uint32(keys.epoch)
        out.fixed(Array(box.nonce))
        out.fixed(box.ciphertext)
        out.fixed(box.tag)
        return out.bytes
    }

    /// The version and epoch an envelope names, before it is opened (to pick the keys).
    static func header(_ envelope: [UInt8]) throws(SealedError) -> KeyEpoch {
        guard envelope.count >= overhead else { throw .malformed("an envelope of \(envelope.count) bytes") }
        guard envelope[0] == SealedFormat.version else { throw .unsupportedVersion(envelope[0]) }
        var reader = SealedReader(Array(envelope[1..<5]))
        return reader.uint32()!
    }

    /// The plaintext, if the envelope was sealed as this object with these keys.
    static func open(
        _ envelope: [UInt8], kind: String, name: [UInt8], key: SymmetricKey, keys: EpochKeys
    ) throws(SealedError) -> [UInt8] {
        let epoch = try header(envelope)
        guard epoch == keys.epoch else { throw .unknownEpoch(epoch) }
        let nonceEnd = 5 + SealedFormat.nonceBytes
        let tagStart = envelope.count - SealedFormat.tagBytes
        let aad = associatedData(kind: kind, name: name, keys: keys, version: envelope[0])
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: envelope[5..<nonceEnd]), ciphertext: envelope[nonceEnd..<tagStart],
                tag: envelope[tagStart...])
            return Array(try AES.GCM.open(box, using: key, authenticating: aad))
        } catch {
            throw .notAuthentic("the \(kind) \(Hex.string(name)) does not open with epoch \(epoch)'s key")
        }
    }

    private static func associatedData(kind: String, name: [UInt8], keys: EpochKeys, version: UInt8) -> [UInt8] {
        var aad = SealedWriter()
        aad.counted(SealedFormat.label(kind))
        aad.fixed(keys.container.bytes)
        aad.byte(version)
        aad.uint32(keys.epoch)
        aad.counted(name)
        return aad.bytes
    }
}
