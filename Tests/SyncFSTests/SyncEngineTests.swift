import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// Two folders (A and B) syncing through one container, each with its engine, without FUSE.
final class SyncedPair {
    let container: any Container
    let a: FileSystemFixture
    let b: FileSystemFixture
    private(set) var engineA: SyncEngine
    private(set) var engineB: SyncEngine
    private let viewOfA: any Container
    private let viewOfB: any Container

    static let fastPolicy = UploadQueue.Policy(
        quietDelay: 5_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)

    /// `viewOfA`: what A talks to (e.g. a fault-injecting wrapper of `container`); B talks to `container`.
    /// `guardsDeletes: false` turns the mass-delete guard off (a test that removes a large tree).
    init(
        container: any Container = InMemoryContainer(), viewOfA: (any Container)? = nil,
        viewOfB: (any Container)? = nil, policy: UploadQueue.Policy = fastPolicy,
        mergeCommands: LocalMergeCommands = .none, guardsDeletes: Bool = true
    ) throws {
        self.container = container
        a = try FileSystemFixture(uploadPolicy: policy)
        b = try FileSystemFixture(uploadPolicy: policy)
        engineA = Self.engine(a, viewOfA ?? container, mergeCommands: mergeCommands, guardsDeletes: guardsDeletes)
        engineB = Self.engine(b, viewOfB ?? container, mergeCommands: mergeCommands, guardsDeletes: guardsDeletes)
        self.viewOfA = viewOfA ?? container
        self.viewOfB = viewOfB ?? container
        engineA.start()
        engineB.start()
    }

    static func engine(
        _ fixture: FileSystemFixture, _ container: any Container, mergeCommands: LocalMergeCommands = .none,
        guardsDeletes: Bool = true
    ) -> SyncEngine {
        var options = SyncEngine.Options()
        options.feedWait = .seconds(2)
        options.mergeCommands = mergeCommands
        // The mass-delete guard stays on, its pause scaled down like the fast upload policy.
        options.deleteGuard?.settle = 50_000_000
        if !guardsDeletes { options.deleteGuard = nil }
        return SyncEngine(fileSystem: fixture.fs, container: container, options: options, logger: .init(label: "t"))
    }

    /// Runs `body` (local changes on A) while A's engine is stopped, then starts a new one: the
    /// changes are all queued, in their order, before any of them is uploaded.
    func withEngineAStopped(_ body: () throws -> Void) throws {
        engineA.stop()
        defer {
            engineA = Self.engine(a, viewOfA)
            engineA.start()
        }
        try body()
    }

    /// Stops B's engine, reopens B's state (as a restart would) and starts a new engine (with
    /// `ignores` installed first, as the daemon does).
    func restartB(ignores: MountIgnores.Settings? = nil, afterShutDown body: () throws -> Void = {}) throws {
        engineB.stop()
        try b.reopen(afterShutDown: body)
        if let ignores { b.fs.configureIgnores(ignores) }
        engineB = Self.engine(b, viewOfB)
        engineB.start()
    }

    deinit {
        engineA.stop()
        engineB.stop()
    }

    /// Both queues empty.
    func settle() async throws {
        try await eventually("both outboxes drain") {
            a.fs.outbox.items.isEmpty && b.fs.outbox.items.isEmpty && a.fs.outbox.inFlightCount == 0
                && b.fs.outbox.inFlightCount == 0
        }
    }
}

/// The bytes of a file by name (root-relative, "/"-separated), through open/read/release.
func contents(_ fixture: FileSystemFixture, _ path: String) throws -> [UInt8] {
    var parent = InodeNumber.root
    let parts = path.split(separator: "/").map(String.init)
    for part in parts.dropLast() { parent = try fixture.lookupIno(part, in: parent) }
    let ino = try fixture.lookupIno(parts.last!, in: parent)
    let handle = try fixture.fs.open(ino, flags: O_RDONLY, caller: testCaller)
    defer { fixture.fs.fileIO.release(handle) }
    let size = try fixture.fs.getattr(ino).size
    // A placeholder is downloaded by the read, as the FUSE read path does.
    try fixture.fs.residency.ensureContent(handle, offset: 0, count: Int(size))
    return readBytes(handle.descriptor, count: Int(size), at: 0)
}

@Suite("SyncEngine: two folders converge through one container", .serialized)
struct SyncEngineTests {
    @Test func aNewFileAppearsOnTheOtherSideWithItsContent() async throws {
        let pair = try SyncedPair()
        let text = Array(String(repeating: "hello sync ", count: 10_000).utf8)
        try pair.a.makeFile("note.txt", contents: text)
        try await eventually("note.txt on B") { try contents(pair.b, "note.txt") == text }
        #expect(try pair.b.fs.getattr(pair.b.lookupIno("note.txt")).mode == 0o644)
    }

    @Test func renamesMovesAndDeletesPropagateByIdentity() async throws {
        let pair = try SyncedPair()
        let dir = try pair.a.mkdir("docs")
        try pair.a.makeFile("draft.txt", contents: Array("v1".utf8))
        try await eventually("draft on B") { try contents(pair.b, "draft.txt") == Array("v1".utf8) }
        let inoOnB = try pair.b.lookupIno("draft.txt")
        try pair.a.fs.rename(
            parent: .root, name: FileName("draft.txt"), newParent: dir, newName: FileName("final.txt"), flags: [])
        try await eventually("moved on B") { try contents(pair.b, "docs/final.txt") == Array("v1".utf8) }
        let docsOnB = try pair.b.lookupIno("docs")
        #expect(try pair.b.lookupIno("final.txt", in: docsOnB) == inoOnB, "a rename is a rename, not delete + create")
        #expect(throws: FSError.notFound) { try pair.b.lookupIno("draft.txt") }
        try pair.a.fs.unlink(parent: dir, name: FileName("final.txt"))
        try pair.a.fs.rmdir(parent: .root, name: FileName("docs"))
        try await eventually("deleted on B") { try pair.b.childNames() == [] }
    }

    @Test func modeTimesAndXattrsPropagate() async throws {
        let pair = try SyncedPair()
        let ino = try pair.a.makeFile("script.sh", contents: Array("#!/bin/sh\n".utf8))
        try await eventually("script on B") { try pair.b.childNames() == ["script.sh"] }
        var changes = AttributeChanges()
        changes.mode = 0o755
        changes.mtime = .at(1_600_000_000_123_456_789)
        _ = try pair.a.fs.setattr(ino, changes, handle: nil)
        try pair.a.fs.xattrs.set(ino, name: "user.tag", value: Array("blue".utf8), mode: .any)
        try await eventually("attributes on B") {
            let attributes = try pair.b.fs.getattr(pair.b.lookupIno("script.sh"))
            let tag = try? pair.b.fs.xattrs.get(pair.b.lookupIno("script.sh"), name: "user.tag")
            return attributes.mode == 0o755 && attributes.mtime == 1_600_000_000_123_456_789
                && tag == Array("blue".utf8)
        }
        try pair.a.fs.xattrs.remove(ino, name: "user.tag")
        try await eventually("xattr removed on B") {
            (try? pair.b.fs.xattrs.get(pair.b.lookupIno("script.sh"), name: "user.tag")) == nil
        }
    }

    @Test func aTemporaryFileCreatedAndDeletedBeforeUploadCostsNothing() async throws {
        let policy = UploadQueue.Policy(
            quietDelay: 300_000_000, initialBackoff: 20_000_000, maximumBackoff: 1_000_000_000)
        let pair = try SyncedPair(policy: policy)
        let ino = try pair.a.makeFile("scratch.tmp", contents: Array("temp".utf8))
        let id = try #require(pair.a.fileID(of: ino))
        try pair.a.fs.unlink(parent: .root, name: FileName("scratch.tmp"))
        try await pair.settle()
        #expect(try await pair.container.entry(id) == nil, "never reached the container")
    }

    @Test func remoteContentIsSwappedInAndAnOpenReaderKeepsTheOldContent() async throws {
        let pair = try SyncedPair()
        let ino = try pair.a.makeFile("doc.txt", contents: Array("old content".utf8))
        try await eventually("doc on B") { try contents(pair.b, "doc.txt") == Array("old content".utf8) }
        let inoB = try pair.b.lookupIno("doc.txt")
        let reader = try pair.b.fs.open(inoB, flags: O_RDONLY, caller: testCaller)
        defer { pair.b.fs.fileIO.release(reader) }
        let writer = try pair.a.fs.open(ino, flags: O_RDWR | O_TRUNC, caller: testCaller)
        try pair.a.write(writer, Array("new content, longer".utf8), at: 0)
        pair.a.fs.fileIO.release(writer)
        try await eventually("new content on B") {
            try contents(pair.b, "doc.txt") == Array("new content, longer".utf8)
        }
        #expect(readBytes(reader.descriptor, count: 100, at: 0) == Array("old content".utf8))
        // The open reader keeps the old inode (and its pages in the kernel); the name leads to a
        // new inode, as after a local replace-by-rename.
        #expect(try pair.b.lookupIno("doc.txt") != inoB)
        #expect(try pair.b.fs.getattr(inoB).nlink == 0)
    }

    @Test func aRemoteEditGivesTheKernelAFreshInodeOnlyIfItKnowsTheOldOne() async throws {
        let pair = try SyncedPair()
        let ino = try pair.a.makeFile("log.txt", contents: Array("one".utf8))
        try await eventually("log on B") { try contents(pair.b, "log.txt") == Array("one".utf8) }
        let inoB = try pair.b.lookupIno("log.txt")
        let idB = pair.b.fileID(of: inoB)
        var writer = try pair.a.fs.open(ino, flags: O_RDWR, caller: testCaller)
        try pair.a.write(writer, Array("two".utf8), at: 3)
        pair.a.fs.fileIO.release(writer)
        // The "kernel" (these lookups) knows inoB: under the writeback cache it would keep the old
        // size and mtime for it, so the new version comes as a new inode, same identity.
        try await eventually("edit on B") { try contents(pair.b, "log.txt") == Array("onetwo".utf8) }
        let second = try pair.b.lookupIno("log.txt")
        #expect(second != inoB)
        #expect(pair.b.fileID(of: second) == idB)
        #expect(try pair.b.fs.getattr(second).size == 6)
        // Once the kernel has forgotten the inode, a remote edit keeps its number.
        pair.b.fs.forget(second, count: 1_000_000)
        writer = try pair.a.fs.open(ino, flags: O_RDWR, caller: testCaller)
        try pair.a.write(writer, Array("three".utf8), at: 6)
        pair.a.fs.fileIO.release(writer)
        try await eventually("second edit on B") {
            pair.b.fs.live.transact { tree in tree.nodes[second]?.size.load(ordering: .relaxed) == 11 }
        }
        #expect(try pair.b.lookupIno("log.txt") == second)
    }

    @Test func saveByRenameKeepsTheFileIdentityOnTheOtherSide() async throws {
        // A quiet delay long enough that the temporary file is never uploaded on its own.
        let pair = try SyncedPair(
            policy: UploadQueue.Policy(quietDelay: 300_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        )
        try pair.a.makeFile("essay.txt", contents: Array("draft 1".utf8))
        try await eventually("essay on B") { try contents(pair.b, "essay.txt") == Array("draft 1".utf8) }
        let idOnB = pair.b.fileID(of: try pair.b.lookupIno("essay.txt"))
        // An editor's save: write a temporary file, rename it over the original.
        try pair.a.makeFile(".essay.txt.swp", contents: Array("draft 2".utf8))
        try pair.a.fs.rename(
            parent: .root, name: FileName(".essay.txt.swp"), newParent: .root, newName: FileName("essay.txt"),
            flags: [])
        try await eventually("save on B") { try contents(pair.b, "essay.txt") == Array("draft 2".utf8) }
        #expect(pair.b.fileID(of: try pair.b.lookupIno("essay.txt")) == idOnB, "same identity")
        try await pair.settle()
        #expect(try pair.b.childNames() == ["essay.txt"], "the temporary file never appeared")
    }

    @Test func bothSidesEditingKeepsBothVersions() async throws {
        let slow = UploadQueue.Policy(quietDelay: 400_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: slow)
        try pair.a.makeFile("shared.txt", contents: Array("base".utf8))
        pair.a.fs.outbox.expediteAll()
        try await eventually("shared on B") { try contents(pair.b, "shared.txt") == Array("base".utf8) }
        let handleA = try pair.a.fs.open(
            try pair.a.lookupIno("shared.txt"), flags: O_RDWR | O_TRUNC, caller: testCaller)
        try pair.a.write(handleA, Array("edited on A".utf8), at: 0)
        pair.a.fs.fileIO.release(handleA)
        let handleB = try pair.b.fs.open(
            try pair.b.lookupIno("shared.txt"), flags: O_RDWR | O_TRUNC, caller: testCaller)
        try pair.b.write(handleB, Array("edited on B".utf8), at: 0)
        pair.b.fs.fileIO.release(handleB)
        pair.a.fs.outbox.expediteAll()
        pair.b.fs.outbox.expediteAll()
        try await pair.settle()
        try await eventually("both trees hold both versions") {
            let namesA = try pair.a.childNames()
            let namesB = try pair.b.childNames()
            guard namesA.count == 2, namesA == namesB else { return false }
            let versionsA = Set(try namesA.map { try contents(pair.a, $0) })
            let versionsB = Set(try namesB.map { try contents(pair.b, $0) })
            return versionsA == [Array("edited on A".utf8), Array("edited on B".utf8)] && versionsA == versionsB
        }
    }

    @Test func queuedChangesSurviveARestartAndStillUpload() async throws {
        let slow = UploadQueue.Policy(
            quietDelay: 60_000_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: slow)
        try pair.b.makeFile("offline.txt", contents: Array("written before the restart".utf8))
        try pair.b.fs.fsyncdir()
        try pair.restartB()
        #expect(pair.b.fs.outbox.items.count == 1, "the queue is rebuilt from the database")
        pair.b.fs.outbox.expediteAll()
        try await eventually("offline.txt on A") {
            try contents(pair.a, "offline.txt") == Array("written before the restart".utf8)
        }
    }
}
