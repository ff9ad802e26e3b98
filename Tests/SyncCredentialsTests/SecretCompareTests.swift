import Testing

@testable import SyncCredentials

@Suite("Secret comparison")
struct SecretCompareTests {
    @Test func equalBytesAreEqual() {
        #expect(constantTimeEquals([], []))
        #expect(constantTimeEquals([1, 2, 3, 255], [1, 2, 3, 255]))
    }

    @Test func aDifferenceAnywhereIsSeen() {
        let secret: [UInt8] = Array("0123456789abcdef".utf8)
        for index in secret.indices {
            var other = secret
            other[index] ^= 0x01
            #expect(!constantTimeEquals(secret, other), "a difference at byte \(index)")
        }
    }

    @Test func differentLengthsAreNotEqual() {
        #expect(!constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(!constantTimeEquals([], [0]))
    }
}
