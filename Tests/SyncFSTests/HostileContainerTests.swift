import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// Entry states for hostile entries (nothing checked).
enum Hostile {
    static func directory(_ name: [UInt8], in parent: FileID?, mode: UInt32 = 0o755) -> EntryState {
        EntryState(parent: parent, name: name, kind: .directory, mode: mode, mtime: 1, size: 0)
    }

    static func file(
        _ name: [UInt8], in parent: FileID?, mode: UInt32 = 0o644, size: Int64 = 0, manifest: [ChunkRef] = [],
        xattrs: [String: [UInt8]] = [:]
    ) -> EntryState {
        EntryState(
            parent: parent, name: name, kind: .file, mode: mode, mtime: 1, size: size, xattrs: xattrs,
            manifest: manifest)
    }

    static func symlink(_ name: [UInt8], in parent: FileID?, to target: [UInt8], manifest: [ChunkRef] = [])
        -> EntryState
    {
        EntryState(
            parent: parent, name: name, kind: .symlink, mode: 0o777, mtime: 1, size: 0, symlinkTarget: target,
            manifest: manifest)
    }

    static let pwned = Array("pwned by a hostile container\n".utf8)
}

/// A name that is not one path component, and how a container would use it to reach the sentinel
/// tree beside the folder (`TMP/mnt/..` is `TMP`).
enum HostileName: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case dotDot, dot, slash, nul, empty, tooLong

    var testDescription: String { rawValue }

    /// The chain of directory names from the root to the sentinel, then the victim's name.
    var route: (directories: [[UInt8]], victim: [UInt8]) {
        switch self {
        case .dotDot: return ([Array("..".utf8), Array("sentinel".utf8)], Array("victim.txt".utf8))
        case .dot: return ([Array(".".utf8), Array("..".utf8), Array("sentinel".utf8)], Array("victim.txt".utf8))
        case .slash: return ([], Array("../sentinel/victim.txt".utf8))
        // As a C string, "..\0x" is "..".
        case .nul:
            return ([Array("..".utf8) + [0] + Array("x".utf8), Array("sentinel".utf8)], Array("victim.txt".utf8))
        case .empty: return ([[]], Array("victim.txt".utf8))
        case .tooLong: return ([], [UInt8](repeating: 0x61, count: 256))
        }
    }
}

/// The client's side of the trust boundary, without FUSE: a `HostileContainer` serves every class
/// of bad entry to one folder following it with the inotify echo on (aimed at a plain directory,
/// so an escaping path would be a real system call on the host). Each bad entry must be refused
/// (listed in `status` with its file ID), change nothing local and nothing outside the folder,
/// and the feed must go on: a good entry committed after it arrives.
@Suite("Hostile container: refused remote entries", .serialized)
struct HostileContainerTests {
    /// What was seen: names `..`, `.`, `a/b` walk out of the folder; as root
    /// the echo truncated, chmod'ed 6777, deleted and created files outside and planted a symlink.
    @Test(arguments: HostileName.allCases)
    func aNameThatIsNotOnePathComponentIsRefusedAndReachesNothing(_ hostile: HostileName) async throws {
        let fixture = try HostileFixture()
        let (directories, victimName) = hostile.route
        var parent = FileID.root
        var bad: [RemoteEntry] = []
        for (depth, name) in directories.enumerated() {
            let served = try await fixture.container.inject(FileID.random(), Hostile.directory(name, in: parent))
            // The first directory is the one with the bad name (`dot`: the first two).
            if depth == 0 || (hostile == .dot && depth == 1) { bad.append(served) }
            parent = served.id
        }
        let chunk = try await fixture.storeChunk(Hostile.pwned)
        let victim = try await fixture.container.inject(
            FileID.random(),
            Hostile.file(victimName, in: parent, mode: 0o6777, size: chunk.length, manifest: [chunk]))
        if directories.isEmpty { bad.append(victim) }
        // Everything the echo could do there: create, plant a symlink, delete.
        let doomed = try await fixture.container.inject(
            FileID.random(), Hostile.file(Array("doomed.txt".utf8), in: parent))
        try await fixture.container.inject(
            FileID.random(), Hostile.file(Array("planted.txt".utf8), in: parent, mode: 0o6777))
        try await fixture.container.inject(
            FileID.random(), Hostile.symlink(Array("planted-link".utf8), in: parent, to: Array("victim.txt".utf8)))
        try await fixture.container.inject(
            RemoteEntry(id: doomed.id, version: 0, isDeleted: true, device: "hostile", state: doomed.state))

        try await fixture.expectTheFeedGoesOn()
        fixture.expectNothingOutsideChanged()
        for entry in bad {
            fixture.expectRefused(entry, "the entry named \(Array(entry.state.name.prefix(12)))")
            #expect(!fixture.isLocal(entry.id), "a refused entry is not in the folder")
        }
        #expect(!fixture.isLocal(victim.id))
        // Without a directory to hide in (`slash`, `tooLong`), the rest are good entries of the
        // root: they are applied there (setuid cleared), inside the folder.
        let planted = directories.isEmpty ? ["planted-link", "planted.txt"] : []
        #expect(try fixture.localPaths() == ["after.txt"] + planted)
        if !planted.isEmpty {
            #expect(try fixture.folder.fs.getattr(fixture.folder.lookupIno("planted.txt")).mode == 0o777)
        }
    }

    /// A file's size must be the sum of its manifest's lengths, and every length positive.
    @Test(arguments: [
        ("size larger than the manifest", 1_000, [10]),
        ("size smaller than the manifest", 3, [10]),
        ("a zero chunk length", 10, [10, 0]),
        ("a negative chunk length", 0, [10, -10]),
    ])
    func aFileWhoseManifestDoesNotAddUpIsRefused(_ what: String, _ size: Int64, _ lengths: [Int64]) async throws {
        let fixture = try HostileFixture()
        let chunk = try await fixture.storeChunk(Array("0123456789".utf8))
        let manifest = lengths.map { ChunkRef(hash: chunk.hash, length: $0) }
        let served = try await fixture.container.inject(
            FileID.random(), Hostile.file(Array("lying.bin".utf8), in: .root, size: size, manifest: manifest))
        try await fixture.expectTheFeedGoesOn()
        fixture.expectRefused(served, what)
        #expect(!fixture.isLocal(served.id))
        #expect(try fixture.localPaths() == ["after.txt"])
        fixture.expectNothingOutsideChanged()
    }

    /// A symlink target must be 1...4095 bytes without NUL; a directory or symlink has no manifest.
    @Test(arguments: [
        ("an empty symlink target", Hostile.symlink(Array("l".utf8), in: .root, to: [])),
        ("a symlink target with NUL", Hostile.symlink(Array("l".utf8), in: .root, to: Array("../sentinel\0x".utf8))),
        (
            "a symlink target of 4096 bytes",
            Hostile.symlink(Array("l".utf8), in: .root, to: [UInt8](repeating: 0x61, count: 4096))
        ),
        (
            "a symlink with a manifest",
            Hostile.symlink(
                Array("l".utf8), in: .root, to: Array("t".utf8),
                manifest: [ChunkRef(hash: ChunkHash(bytes: [UInt8](repeating: 1, count: 32))!, length: 4)])
        ),
        (
            "a directory with a manifest",
            EntryState(
                parent: .root, name: Array("d".utf8), kind: .directory, mode: 0o755, mtime: 1, size: 4,
                manifest: [ChunkRef(hash: ChunkHash(bytes: [UInt8](repeating: 1, count: 32))!, length: 4)])
        ),
        (
            "a file with a symlink target",
            EntryState(
                parent: .root, name: Array("f".utf8), kind: .file, mode: 0o644, mtime: 1, size: 0,
                symlinkTarget: Array("../sentinel/victim.txt".utf8))
        ),
    ])
    func anEntryWithContentItsKindCannotHaveIsRefused(_ what: String, _ state: EntryState) async throws {
        let fixture = try HostileFixture()
        let served = try await fixture.container.inject(FileID.random(), state)
        try await fixture.expectTheFeedGoesOn()
        fixture.expectRefused(served, what)
        #expect(!fixture.isLocal(served.id))
        #expect(try fixture.localPaths() == ["after.txt"])
        fixture.expectNothingOutsideChanged()
    }

    /// Only `user.` extended attributes sync: `security.capability` would grant capabilities,
    /// `trusted.*` and `system.*` are the kernel's and root's.
    @Test(arguments: ["security.capability", "trusted.overlay.opaque", "system.posix_acl_access", "user", ""])
    func anXattrOutsideTheUserNamespaceIsRefused(_ name: String) async throws {
        let fixture = try HostileFixture()
        let served = try await fixture.container.inject(
            FileID.random(), Hostile.file(Array("caps".utf8), in: .root, mode: 0o755, xattrs: [name: [1, 0, 0, 2]]))
        try await fixture.expectTheFeedGoesOn()
        fixture.expectRefused(served, "an xattr named \(name)")
        #expect(!fixture.isLocal(served.id))
        fixture.expectNothingOutsideChanged()
    }

    @Test func anEntryThatIsItsOwnParentIsRefused() async throws {
        let fixture = try HostileFixture()
        let id = FileID.random()
        let served = try await fixture.container.inject(id, Hostile.directory(Array("self".utf8), in: id))
        let child = try await fixture.container.inject(FileID.random(), Hostile.file(Array("inside".utf8), in: id))
        try await fixture.expectTheFeedGoesOn()
        fixture.expectRefused(served, "a directory inside itself")
        #expect(!fixture.isLocal(id) && !fixture.isLocal(child.id))
        #expect(try fixture.localPaths() == ["after.txt"])
        fixture.expectNothingOutsideChanged()
    }

    /// A in B and B in A: neither reaches the root; the follower must not chase parents forever.
    @Test func parentsFormingACycleAreRefused() async throws {
        let fixture = try HostileFixture()
        let a = FileID.random()
        let b = FileID.random()
        let servedA = try await fixture.container.inject(a, Hostile.directory(Array("a".utf8), in: b))
        let servedB = try await fixture.container.inject(b, Hostile.directory(Array("b".utf8), in: a))
        try await fixture.container.inject(FileID.random(), Hostile.file(Array("in-a".utf8), in: a))
        try await fixture.expectTheFeedGoesOn()
        let refused = fixture.refusedIDs
        #expect(refused.contains(a.hex) || refused.contains(b.hex), "the cycle is listed as refused")
        for served in [servedA, servedB] where refused.contains(served.id.hex) {
            fixture.expectRefused(served, "a directory in a cycle")
        }
        #expect(!fixture.isLocal(a) && !fixture.isLocal(b))
        #expect(try fixture.localPaths() == ["after.txt"])
        fixture.expectNothingOutsideChanged()
    }

    /// Everything below a refused directory is refused too ("its parent … was refused"), not
    /// deferred: a deferred entry would keep the follower polling for it (and the mount from
    /// ever being caught up) for as long as the container lies.
    @Test func entriesBelowARefusedDirectoryAreRefusedNotDeferred() async throws {
        let fixture = try HostileFixture()
        let bad = try await fixture.container.inject(FileID.random(), Hostile.directory(Array("..".utf8), in: .root))
        let child = try await fixture.container.inject(FileID.random(), Hostile.file(Array("child".utf8), in: bad.id))
        let cycleA = FileID.random()
        let cycleB = FileID.random()
        try await fixture.container.inject(cycleA, Hostile.directory(Array("a".utf8), in: cycleB))
        try await fixture.container.inject(cycleB, Hostile.directory(Array("b".utf8), in: cycleA))
        try await fixture.expectTheFeedGoesOn()
        fixture.expectRefused(bad, "the directory named ..")
        fixture.expectRefused(child, "the file inside it")
        let reason = fixture.engine.status().refusedRemoteEntries.first { $0.fileID == child.id.hex }?.reason
        #expect(reason?.contains("parent") == true, "the reason names the parent: \(reason ?? "none")")
        #expect(fixture.refusedIDs.contains(cycleA.hex) && fixture.refusedIDs.contains(cycleB.hex), "both of a cycle")
        try await eventually("the follower is caught up: nothing deferred") {
            fixture.engine.status().feedCaughtUp
        }
    }

    /// The root is a directory without a parent, whatever a container says.
    @Test(arguments: [
        ("a root that is a file", Hostile.file([], in: nil, mode: 0o6777)),
        ("a root with a parent", Hostile.directory([], in: FileID(high: 1, low: 1))),
        ("a root named ..", Hostile.directory(Array("..".utf8), in: nil)),
    ])
    func aRootThatIsNotARootDirectoryIsRefused(_ what: String, _ state: EntryState) async throws {
        let fixture = try HostileFixture()
        try await fixture.commitGoodFile("before.txt", Array("before\n".utf8))
        try await eventually("before.txt") { try fixture.folder.childNames() == ["before.txt"] }
        let served = try await fixture.container.inject(.root, state)
        try await fixture.expectTheFeedGoesOn()
        fixture.expectRefused(served, what)
        let root = try fixture.folder.fs.getattr(.root)
        #expect(root.kind == .directory && root.mode & 0o7000 == 0)
        #expect(try fixture.localPaths() == ["after.txt", "before.txt"])
        fixture.expectNothingOutsideChanged()
    }
}
