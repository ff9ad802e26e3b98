import Foundation
import Testing

@testable import SyncBackend

/// `EntryStateRules` and `RemoteEntryValidation`: every class of bad field a hostile container
/// could send is refused with a reason; a well-formed entry passes. The same rules refuse a commit
/// (`CommitRules` through `RequestValidation`), so no container stores what clients refuse.
@Suite("Remote entry validation")
struct RemoteEntryValidationTests {
    static let parent = FileID.random()
    static let id = FileID.random()

    static func file(_ change: (inout EntryState) -> Void = { _ in }) -> RemoteEntry {
        var state = EntryState(
            parent: parent, name: Array("ok.txt".utf8), kind: .file, mode: 0o644, mtime: 1, size: 5,
            xattrs: ["user.tag": Array("blue".utf8)],
            manifest: [ChunkRef(hash: ChunkHash(bytes: Array(repeating: 7, count: 32))!, length: 5)])
        change(&state)
        return RemoteEntry(id: id, version: 7, isDeleted: false, device: "device-a", state: state)
    }

    static func symlink(_ target: [UInt8]) -> RemoteEntry {
        let state = EntryState(
            parent: parent, name: Array("l".utf8), kind: .symlink, mode: 0o777, mtime: 1, size: 0,
            symlinkTarget: target)
        return RemoteEntry(id: id, version: 7, isDeleted: false, device: "device-a", state: state)
    }

    @Test func aWellFormedEntryPasses() {
        #expect(RemoteEntryValidation.problem(with: Self.file()) == nil)
        #expect(RemoteEntryValidation.problem(with: Self.symlink(Array("../../etc".utf8))) == nil, "targets are data")
        #expect(RemoteEntryValidation.problem(with: Self.file { $0.mode = 0o6755 }) == nil, "setuid is cleared later")
        var tombstone = Self.file()
        tombstone.isDeleted = true
        #expect(RemoteEntryValidation.problem(with: tombstone) == nil)
    }

    static let badNames: [[UInt8]] = [
        [], Array(".".utf8), Array("..".utf8), Array("a/b".utf8), Array("/".utf8), [0x61, 0, 0x62],
        Array(repeating: 0x61, count: 256),
    ]

    @Test(arguments: badNames) func badNamesAreRefused(name: [UInt8]) {
        #expect(RemoteEntryValidation.problem(with: Self.file { $0.name = name }) != nil)
        var tombstone = Self.file { $0.name = name }
        tombstone.isDeleted = true
        #expect(RemoteEntryValidation.problem(with: tombstone) != nil, "a tombstone's state is checked too")
    }

    @Test func badShapesAreRefused() {
        let refused: [(String, RemoteEntry)] = [
            ("size differs from manifest", Self.file { $0.size = 6 }),
            (
                "zero-length chunk",
                Self.file {
                    $0.manifest[0].length = 0
                    $0.size = 0
                }
            ),
            (
                "negative size",
                Self.file {
                    $0.manifest = []
                    $0.size = -1
                }
            ),
            (
                "chunk over the limit",
                Self.file {
                    $0.manifest[0].length = Int64(WireProtocol.maxChunkPlainLength) + 1
                    $0.size = $0.manifest[0].length
                }
            ),
            ("file with a target", Self.file { $0.symlinkTarget = [0x61] }),
            ("directory with a manifest", Self.file { $0.kind = .directory }),
            ("mode beyond 0o7777", Self.file { $0.mode = 0o17777 }),
            ("own parent", Self.file { $0.parent = Self.id }),
            ("no parent", Self.file { $0.parent = nil }),
            ("empty symlink target", Self.symlink([])),
            ("NUL in symlink target", Self.symlink([0x61, 0, 0x62])),
            ("symlink target too long", Self.symlink(Array(repeating: 0x61, count: 4096))),
            ("xattr outside user.", Self.file { $0.xattrs = ["security.selinux": [1]] }),
            ("xattr user. alone", Self.file { $0.xattrs = ["user.": [1]] }),
            ("the folder's own xattr", Self.file { $0.xattrs = ["user.syncfs.pinned": Array("1".utf8)] }),
            ("xattr value too large", Self.file { $0.xattrs = ["user.big": Array(repeating: 1, count: 65537)] }),
        ]
        for (what, entry) in refused {
            #expect(RemoteEntryValidation.problem(with: entry) != nil, "\(what)")
        }
        #expect(
            RemoteEntryValidation.problem(with: Self.file { $0.xattrs = ["user.syncfs.conflict": Array("{}".utf8)] })
                == nil, "the conflict note syncs")
    }

    @Test func badEnvelopesAreRefused() {
        var entry = Self.file()
        entry.version = 0
        #expect(RemoteEntryValidation.problem(with: entry) != nil, "version 0 is no commit")
        entry.version = UInt64(Int64.max) + 1
        #expect(RemoteEntryValidation.problem(with: entry) != nil)
        entry = Self.file()
        entry.device = "a\nb"
        #expect(RemoteEntryValidation.problem(with: entry) != nil, "control characters")
        for control in ["a\u{7F}", "\u{0}", "\u{1F}x", "x\u{85}", "\u{9F}"] {
            entry.device = control
            #expect(RemoteEntryValidation.problem(with: entry) != nil, "DEL and C1 are control characters")
        }
        for printable in ["laptop-3f2a", "Zoë's Mac", "\u{A0}", "~ ", "東京-01"] {
            entry.device = printable
            #expect(RemoteEntryValidation.problem(with: entry) == nil, "\(printable) is printable")
        }
        entry.device = String(repeating: "d", count: 257)
        #expect(RemoteEntryValidation.problem(with: entry) != nil)
        let badRoots = [
            RemoteEntry(
                id: .root, version: 3, isDeleted: false, device: "",
                state: EntryState(parent: nil, name: [], kind: .file, mode: 0o755, mtime: 0, size: 0)),
            RemoteEntry(
                id: .root, version: 3, isDeleted: false, device: "",
                state: EntryState(parent: Self.parent, name: [], kind: .directory, mode: 0o755, mtime: 0, size: 0)),
            RemoteEntry(id: .root, version: 3, isDeleted: true, device: "", state: CommitRules.implicitRoot.state),
        ]
        for root in badRoots { #expect(RemoteEntryValidation.problem(with: root) != nil) }
    }

    @Test func containersRefuseTheSameCommits() async throws {
        let container = InMemoryContainer()
        for name in Self.badNames {
            let request = CommitRequest(
                id: .random(), baseVersion: 0,
                change: .put(EntryState(parent: .root, name: name, kind: .directory, mode: 0o755, mtime: 1, size: 0)),
                device: "d")
            await #expect(throws: ContainerProtocolError.self) { _ = try await container.commit(request) }
        }
        let changes = try await container.changes(after: .beginning, limit: 100)
        #expect(changes.entries.isEmpty, "nothing was stored")
    }
}
