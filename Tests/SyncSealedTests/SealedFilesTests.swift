import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncSealed

@Suite("The device key and ledger head files")
struct SealedFilesTests {
    @Test func theDeviceKeyIsMadeOncePrivateAndReadBack() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/keys/device-key"
        let made = try DeviceKeyFile.loadOrCreate(path)
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(stat(directory.path + "/keys", &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(try DeviceKeyFile.loadOrCreate(path).identity == made.identity)
    }

    @Test func processesMakingTheKeyAtOnceAgreeOnOneAndLeaveNothingElse() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/device-key"
        let made = try await withThrowingTaskGroup(of: DeviceIdentity.self) { group in
            for _ in 0..<8 { group.addTask { try DeviceKeyFile.loadOrCreate(path).identity } }
            return try await group.reduce(into: Set<DeviceIdentity>()) { $0.insert($1) }
        }
        #expect(made.count == 1)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names == ["device-key"], "no half-made key file is left: \(names)")
    }

    @Test func aKeyOthersCanReadOrASymlinkIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/device-key"
        _ = try DeviceKeyFile.loadOrCreate(path)
        #expect(chmod(path, 0o644) == 0)
        #expect(throws: SealedFileError.self) { try DeviceKeyFile.load(path) }
        #expect(chmod(path, 0o600) == 0)
        let link = directory.path + "/link"
        #expect(symlink(path, link) == 0)
        #expect(throws: SealedFileError.self) { try DeviceKeyFile.load(link) }
        let garbage = directory.path + "/garbage"
        #expect(PrivateFiles.createFile(garbage, Array("not a key".utf8)) == nil)
        #expect(throws: SealedFileError.self) { try DeviceKeyFile.load(garbage) }
    }

    @Test func theHeadFileRoundTrips() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/" + SealedHeadFile.name
        #expect(try SealedHeadFile.read(path) == nil)
        let head = LedgerHead(sequence: 42, digest: [UInt8](repeating: 9, count: 32))
        try SealedHeadFile.write(head, to: path)
        try SealedHeadFile.write(LedgerHead(sequence: 43, digest: head.digest), to: path)
        #expect(try SealedHeadFile.read(path) == LedgerHead(sequence: 43, digest: head.digest))
    }
}
