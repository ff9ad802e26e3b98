import Glibc
import Synchronization
import Testing

@testable import SyncFS

@Suite("SyncFileSystem: setattr, ownership, times")
struct AttributesTests {
    @Test func modeOwnerAndTimesChange() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        var changes = AttributeChanges()
        changes.mode = UInt32(S_IFREG) | 0o600
        changes.uid = 42
        changes.gid = 43
        changes.atime = .at(1_000_000_001)
        changes.mtime = .at(2_000_000_002)
        let attributes = try fixture.fs.setattr(ino, changes, handle: nil)
        #expect(attributes.mode == 0o600)
        #expect(attributes.uid == 42 && attributes.gid == 43)
        #expect(attributes.atime == 1_000_000_001)
        #expect(attributes.mtime == 2_000_000_002)
        #expect(try fixture.fs.getattr(ino) == attributes)
        let stored = try fixture.fs.store.load().entries.first { $0.ino == ino }
        #expect(stored?.mode == 0o600)
        #expect(stored?.uid == 42)
        #expect(stored?.mtime == 2_000_000_002)
    }

    @Test func timesSetToNowMove() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        var old = AttributeChanges()
        old.atime = .at(5)
        old.mtime = .at(6)
        _ = try fixture.fs.setattr(ino, old, handle: nil)
        var now = AttributeChanges()
        now.atime = .now
        now.mtime = .now
        let attributes = try fixture.fs.setattr(ino, now, handle: nil)
        #expect(attributes.atime > 5)
        #expect(attributes.mtime > 6)
    }

    @Test func changeOfOwnerClearsSetuidAndGroupExecutableSetgid() throws {
        let fixture = try FileSystemFixture()
        let executable = try fixture.makeFile("x")
        let plain = try fixture.makeFile("p")
        var setBits = AttributeChanges()
        setBits.mode = 0o6755
        _ = try fixture.fs.setattr(executable, setBits, handle: nil)
        setBits.mode = 0o6644
        _ = try fixture.fs.setattr(plain, setBits, handle: nil)
        var chown = AttributeChanges()
        chown.uid = 99
        #expect(try fixture.fs.setattr(executable, chown, handle: nil).mode == 0o0755)
        #expect(try fixture.fs.setattr(plain, chown, handle: nil).mode == 0o2644, "setgid without group-exec stays")
    }

    @Test func newEntriesInASetgidDirectoryTakeItsGroup() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("shared", mode: 0o2775)
        var group = AttributeChanges()
        group.gid = 777
        _ = try fixture.fs.setattr(directory, group, handle: nil)
        let file = try fixture.makeFile("f", in: directory)
        let subdirectory = try fixture.mkdir("d", in: directory)
        #expect(try fixture.fs.getattr(file).gid == 777)
        #expect(try fixture.fs.getattr(subdirectory).gid == 777)
        #expect(try fixture.fs.getattr(subdirectory).mode & UInt32(S_ISGID) != 0)
        #expect(try fixture.fs.getattr(file).uid == testCaller.uid)
    }

    @Test func truncateRefusesDirectoriesAndSymlinksAndNegativeSizes() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("d")
        let link = try fixture.fs.symlink(target: bytes("d"), parent: .root, name: FileName("l"), caller: testCaller)
        let file = try fixture.makeFile("f", contents: bytes("abc"))
        var changes = AttributeChanges()
        changes.size = 0
        #expect(throws: FSError.isDirectory) { try fixture.fs.setattr(directory, changes, handle: nil) }
        #expect(throws: FSError.invalidArgument) { try fixture.fs.setattr(link.attributes.ino, changes, handle: nil) }
        changes.size = -1
        #expect(throws: FSError.invalidArgument) { try fixture.fs.setattr(file, changes, handle: nil) }
        #expect(try fixture.fs.getattr(file).size == 3)
    }

    @Test func truncateThroughAnOpenHandle() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("abcdef"))
        let handle = try fixture.fs.open(ino, flags: O_RDWR, caller: testCaller)
        defer { fixture.fs.fileIO.release(handle) }
        var changes = AttributeChanges()
        changes.size = 2
        #expect(try fixture.fs.setattr(ino, changes, handle: handle).size == 2)
        #expect(readBytes(handle.descriptor, count: 16, at: 0) == bytes("ab"))
    }

    @Test func directoryTimesMoveWhenChildrenChange() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("d")
        var old = AttributeChanges()
        old.mtime = .at(10)
        old.ctime = 10
        _ = try fixture.fs.setattr(directory, old, handle: nil)
        try fixture.makeFile("f", in: directory)
        let attributes = try fixture.fs.getattr(directory)
        #expect(attributes.mtime > 10)
        #expect(attributes.ctime > 10)
    }

    // MARK: Privilege kill (killpriv v2: the daemon clears setuid/setgid)

    /// Sets `mode` on a new file and returns it.
    func fileWithMode(_ fixture: FileSystemFixture, _ name: String, _ mode: UInt32) throws -> InodeNumber {
        let ino = try fixture.makeFile(name)
        var changes = AttributeChanges()
        changes.mode = mode
        #expect(try fixture.fs.setattr(ino, changes, handle: nil).mode == mode)
        return ino
    }

    @Test func anUnprivilegedWriteClearsSetuidAndGroupExecutableSetgid() throws {
        let fixture = try FileSystemFixture()
        let invalidations = InvalidationLog()
        fixture.fs.setInvalidator(invalidations)
        let executable = try fileWithMode(fixture, "x", 0o6755)
        let plain = try fileWithMode(fixture, "p", 0o2644)
        for ino in [executable, plain] {
            let handle = try fixture.fs.open(ino, flags: O_WRONLY, caller: testCaller)
            try fixture.write(handle, bytes("data"), at: 0, as: testCaller)
            fixture.fs.fileIO.release(handle)
        }
        #expect(try fixture.fs.getattr(executable).mode == 0o0755)
        #expect(try fixture.fs.getattr(plain).mode == 0o2644, "setgid without group-exec is no privilege")
        #expect(invalidations.inodes == [executable], "the kernel is told the attributes changed")
        let stored = try fixture.fs.store.load().entries.first { $0.ino == executable }
        #expect(stored?.mode == 0o0755)
    }

    @Test func aWriteByRootKeepsSetuid() throws {
        let fixture = try FileSystemFixture()
        let ino = try fileWithMode(fixture, "x", 0o4755)
        let handle = try fixture.fs.open(ino, flags: O_WRONLY, caller: Caller(uid: 0, gid: 0))
        try fixture.write(handle, bytes("data"), at: 0, as: Caller(uid: 0, gid: 0))
        fixture.fs.fileIO.release(handle)
        #expect(try fixture.fs.getattr(ino).mode == 0o4755)
        #expect(try fixture.fs.getattr(ino).size == 4)
    }

    @Test func openWithTruncateByAnUnprivilegedCallerClearsSetuid() throws {
        let fixture = try FileSystemFixture()
        let byUser = try fileWithMode(fixture, "u", 0o4755)
        let byRoot = try fileWithMode(fixture, "r", 0o4755)
        fixture.fs.fileIO.release(try fixture.fs.open(byUser, flags: O_WRONLY | O_TRUNC, caller: testCaller))
        fixture.fs.fileIO.release(
            try fixture.fs.open(byRoot, flags: O_WRONLY | O_TRUNC, caller: Caller(uid: 0, gid: 0)))
        #expect(try fixture.fs.getattr(byUser).mode == 0o0755)
        #expect(try fixture.fs.getattr(byRoot).mode == 0o4755)
    }

    @Test func setattrCanKillPrivileges() throws {
        let fixture = try FileSystemFixture()
        let ino = try fileWithMode(fixture, "x", 0o6775)
        var changes = AttributeChanges()
        changes.killPrivileges = true
        #expect(try fixture.fs.setattr(ino, changes, handle: nil).mode == 0o0775)
    }
}

/// Records the inodes the file system asked the kernel to forget attributes of.
final class InvalidationLog: KernelCacheInvalidating {
    private let state = Mutex<[InodeNumber]>([])
    func attributesChanged(_ ino: InodeNumber) { state.withLock { $0.append(ino) } }
    func writeBackPages(_ ino: InodeNumber) {}
    func entryChanged(parent: InodeNumber, name: FileName) {}
    var inodes: [InodeNumber] { state.withLock { $0 } }
}
