import Foundation
import Glibc
import TestSupport
import Testing

@testable import SyncFS

@Suite("ContentEntropy: what looks encrypted to the mass-delete guard")
struct ContentEntropyTests {
    private func isHigh(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { ContentEntropy.isHigh($0) } }

    private func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    @Test func randomBytesAreHighAndTextIsNot() {
        #expect(isHigh(random(512)))
        #expect(isHigh(random(64 * 1024)))
        let prose = Array(
            String(repeating: "The quick brown fox jumps over the lazy dog. 0123456789\n", count: 40).utf8)
        #expect(!isHigh(prose))
        let json = Array(
            (0..<200).map { "{\"id\": \($0), \"name\": \"item-\($0)\", \"tags\": [\"a\", \"b\"]}\n" }.joined().utf8)
        #expect(!isHigh(json))
        let hex = Array((0..<400).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined().utf8)
        #expect(!isHigh(hex), "hex text is 4 bits a byte at most")
    }

    @Test func tooShortASampleIsNeverHigh() {
        #expect(!isHigh(random(ContentEntropy.minimumSample - 1)))
        #expect(!isHigh([]))
    }

    @Test func theSampleIsReadFromTheFileWithoutMovingItsOffset() throws {
        let directory = try TemporaryDirectory("entropy")
        let path = directory.path + "/sample"
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let bytes = random(4096)
        #expect(bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == 4096)
        #expect(ContentEntropy.isHigh(descriptor: descriptor))
        #expect(lseek(descriptor, 0, SEEK_CUR) == 4096)
        #expect(ftruncate(descriptor, 100) == 0)
        #expect(!ContentEntropy.isHigh(descriptor: descriptor), "100 bytes say nothing")
    }
}
