import Crypto
import SyncBackend
import Testing

@testable import SyncSealed

@Suite("Device keys, recovery key, keyring and ledger")
struct KeyTests {
    @Test func deviceKeysSurviveTheirFileForm() throws {
        let keys = DeviceKeys.generate()
        let read = try DeviceKeys(encoded: keys.encoded)
        #expect(read.identity == keys.identity)
        #expect(throws: SealedError.self) { try DeviceKeys(encoded: Array(keys.encoded.dropLast())) }
        var other = keys.encoded
        other[0] ^= 1
        #expect(throws: SealedError.self) { try DeviceKeys(encoded: other) }
    }

    @Test func theRecoveryKeyTextRoundTripsAndCatchesTypos() throws {
        let key = RecoveryKey.generate()
        let text = key.text
        #expect(text.hasPrefix("SFR1-"))
        let read = try #require(RecoveryKey(text: text.lowercased().replacingOccurrences(of: "-", with: " ")))
        #expect(read.secret == key.secret)
        #expect(read.deviceKeys.identity == key.deviceKeys.identity)
        var characters = Array(text)
        let index = characters.count - 8
        characters[index] = characters[index] == "A" ? "B" : "A"
        #expect(RecoveryKey(text: String(characters)) == nil)
        #expect(RecoveryKey(text: "SFR1-AAAA") == nil)
        #expect(RecoveryKey(text: String(text.dropFirst(5))) == nil)
    }

    @Test func anEpochSecretOpensOnlyForItsDeviceEpochAndContainer() throws {
        let container = SealedContainerID.random()
        let device = DeviceKeys.generate()
        let secret = EpochSecret.random()
        let wrapped = EpochKeyWrap.wrap(secret, epoch: 2, container: container, to: device.identity)
        #expect(wrapped.count == EpochKeyWrap.wrappedBytes)
        #expect(try EpochKeyWrap.unwrap(wrapped, epoch: 2, container: container, with: device) == secret)
        #expect(throws: SealedError.self) {
            try EpochKeyWrap.unwrap(wrapped, epoch: 3, container: container, with: device)
        }
        #expect(throws: SealedError.self) {
            try EpochKeyWrap.unwrap(wrapped, epoch: 2, container: .random(), with: device)
        }
        #expect(throws: SealedError.self) {
            try EpochKeyWrap.unwrap(wrapped, epoch: 2, container: container, with: .generate())
        }
    }

    @Test func aRemovedDeviceGetsNoSecretOfTheNextEpoch() throws {
        let container = SealedContainerID.random()
        let creator = DeviceKeys.generate()
        let recovery = RecoveryKey.generate().deviceKeys
        let first = EpochSecret.random()
        var keyring = Keyring.genesis(
            container: container, creator: creator.identity, recovery: recovery.identity, secret: first)
        let laptop = DeviceKeys.generate()
        keyring = keyring.adding(laptop.identity, in: 2, secrets: [0: first])
        #expect(try keyring.secrets(for: laptop) == [0: first])
        let second = EpochSecret.random()
        keyring = keyring.removing(laptop.identity.signing, newSecret: second)
        #expect(keyring.newestEpoch == 1)
        #expect(try keyring.secrets(for: laptop) == [0: first])
        #expect(try keyring.secrets(for: creator) == [0: first, 1: second])
        #expect(try keyring.secrets(for: recovery) == [0: first, 1: second])
        #expect(keyring.signer(laptop.identity.signing) == nil)
        #expect(keyring.signer(recovery.identity.signing) == recovery.identity)
        #expect(try Keyring(encoded: keyring.encoded) == keyring)
    }

    @Test func aKeyringRefusesMalformedBytes() throws {
        let keyring = Keyring.genesis(
            container: .random(), creator: DeviceKeys.generate().identity,
            recovery: RecoveryKey.generate().deviceKeys.identity, secret: .random())
        let encoded = keyring.encoded
        for length in [0, 1, 17, 100, encoded.count - 1] {
            #expect(throws: SealedError.self) { try Keyring(encoded: Array(encoded.prefix(length))) }
        }
        #expect(throws: SealedError.self) { try Keyring(encoded: encoded + [0]) }
        var downgraded = encoded
        downgraded[0] = 0
        #expect(throws: SealedError.unsupportedVersion(0)) { try Keyring(encoded: downgraded) }
    }

    @Test func aLedgerEntryChecksOnlyWithItsSignerAndAsSigned() throws {
        let device = DeviceKeys.generate()
        let entry = LedgerEntry(
            container: .random(), sequence: 1, previous: LedgerEntry.genesisPrevious, epoch: 0, time: 1,
            device: "d",
            changes: [LedgerChange(id: .random(), digest: [UInt8](repeating: 7, count: 32), deleted: false)],
            signedBy: device)
        let read = try LedgerEntry(encoded: entry.encoded)
        #expect(read == entry)
        #expect(read.isSigned(by: device.identity))
        #expect(!read.isSigned(by: DeviceKeys.generate().identity))
        for index in stride(from: 1, to: entry.encoded.count, by: 5) {
            var bytes = entry.encoded
            bytes[index] ^= 0x80
            if let changed = try? LedgerEntry(encoded: bytes) { #expect(!changed.isSigned(by: device.identity)) }
        }
    }

    @Test func theSafetyCodeChangesWithTheContainerOrTheKey() {
        let device = DeviceKeys.generate().identity
        let genesis = [UInt8](repeating: 1, count: 32)
        let code = SafetyCode.code(genesis: genesis, device: device)
        #expect(code.count == 35)
        #expect(code.split(separator: " ").allSatisfy { $0.count == 5 && $0.allSatisfy(\.isNumber) })
        #expect(SafetyCode.code(genesis: genesis, device: device) == code)
        #expect(SafetyCode.code(genesis: [UInt8](repeating: 2, count: 32), device: device) != code)
        #expect(SafetyCode.code(genesis: genesis, device: DeviceKeys.generate().identity) != code)
    }
}
