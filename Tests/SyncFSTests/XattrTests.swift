import Glibc
import Testing

@testable import SyncFS

@Suite("SyncFileSystem: user.* extended attributes")
struct XattrTests {
    @Test func setGetListRemove() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        try fixture.fs.xattrs.set(ino, name: "user.b", value: [2], mode: .any)
        try fixture.fs.xattrs.set(ino, name: "user.a", value: bytes("one"), mode: .any)
        try fixture.fs.xattrs.set(ino, name: "user.empty", value: [], mode: .any)
        #expect(try fixture.fs.xattrs.get(ino, name: "user.a") == bytes("one"))
        #expect(try fixture.fs.xattrs.get(ino, name: "user.empty") == [])
        #expect(try fixture.fs.xattrs.list(ino) == ["user.a", "user.b", "user.empty"])
        try fixture.fs.xattrs.remove(ino, name: "user.b")
        #expect(try fixture.fs.xattrs.list(ino) == ["user.a", "user.empty"])
        #expect(throws: FSError.noAttribute) { try fixture.fs.xattrs.get(ino, name: "user.b") }
        #expect(throws: FSError.noAttribute) { try fixture.fs.xattrs.remove(ino, name: "user.b") }
    }

    @Test func createModeRefusesAnExistingAttribute() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        try fixture.fs.xattrs.set(ino, name: "user.k", value: [1], mode: .create)
        #expect(throws: FSError.exists) { try fixture.fs.xattrs.set(ino, name: "user.k", value: [2], mode: .create) }
        #expect(try fixture.fs.xattrs.get(ino, name: "user.k") == [1])
    }

    @Test func replaceModeNeedsAnExistingAttribute() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        #expect(throws: FSError.noAttribute) {
            try fixture.fs.xattrs.set(ino, name: "user.k", value: [1], mode: .replace)
        }
        #expect(try fixture.fs.xattrs.list(ino).isEmpty)
        try fixture.fs.xattrs.set(ino, name: "user.k", value: [1], mode: .any)
        try fixture.fs.xattrs.set(ino, name: "user.k", value: [9, 9], mode: .replace)
        #expect(try fixture.fs.xattrs.get(ino, name: "user.k") == [9, 9])
        try fixture.fs.xattrs.set(ino, name: "user.k", value: [3], mode: .any)
        #expect(try fixture.fs.xattrs.get(ino, name: "user.k") == [3])
    }

    @Test func otherNamespacesAreNotSupported() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        for name in ["security.selinux", "trusted.x", "system.posix_acl_access", "user.", "plain"] {
            #expect(throws: FSError.notSupported) { try fixture.fs.xattrs.set(ino, name: name, value: [1], mode: .any) }
        }
        #expect(throws: FSError.noAttribute) { try fixture.fs.xattrs.get(ino, name: "security.capability") }
        #expect(throws: FSError.notSupported) { try fixture.fs.xattrs.remove(ino, name: "trusted.x") }
        #expect(try fixture.fs.xattrs.list(ino).isEmpty)
    }

    @Test func sizeLimits() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        let largest = [UInt8](repeating: 0xab, count: ExtendedAttributes.maxXattrValue)
        try fixture.fs.xattrs.set(ino, name: "user.large", value: largest, mode: .any)
        #expect(try fixture.fs.xattrs.get(ino, name: "user.large") == largest)
        #expect(throws: FSError.noSpace) {
            try fixture.fs.xattrs.set(ino, name: "user.huge", value: largest + [0], mode: .any)
        }
        let longName = "user." + String(repeating: "n", count: 251)  // 256 bytes
        #expect(throws: FSError.range) { try fixture.fs.xattrs.set(ino, name: longName, value: [1], mode: .any) }
        #expect(try fixture.fs.xattrs.list(ino) == ["user.large"])
    }

    @Test func directoriesTakeAttributesSymlinksDoNot() throws {
        let fixture = try FileSystemFixture()
        let directory = try fixture.mkdir("d")
        try fixture.fs.xattrs.set(directory, name: "user.tag", value: [1], mode: .create)
        #expect(try fixture.fs.xattrs.get(directory, name: "user.tag") == [1])
        let link = try fixture.fs.symlink(target: bytes("d"), parent: .root, name: FileName("l"), caller: testCaller)
        #expect(throws: FSError.notPermitted) {
            try fixture.fs.xattrs.set(link.attributes.ino, name: "user.tag", value: [1], mode: .any)
        }
    }

    @Test func settingAnAttributeChangesCtime() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f")
        var old = AttributeChanges()
        old.ctime = 1_000
        #expect(try fixture.fs.setattr(ino, old, handle: nil).ctime == 1_000)
        try fixture.fs.xattrs.set(ino, name: "user.k", value: [1], mode: .any)
        #expect(try fixture.fs.getattr(ino).ctime > 1_000)
    }

    @Test func attributesOfAMissingNode() throws {
        let fixture = try FileSystemFixture()
        let missing = InodeNumber(4242)
        #expect(throws: FSError.notFound) { try fixture.fs.xattrs.set(missing, name: "user.k", value: [1], mode: .any) }
        #expect(throws: FSError.notFound) { try fixture.fs.xattrs.list(missing) }
    }
}
