import Glibc
import SyncBackend
import SyncBackendTesting
import SyncMerge
import TestSupport
import Testing

@testable import SyncFS

/// The uploader under ignore rules (doc/SEMANTICS.md, "Ignored paths on a mount"), on two
/// folders syncing through one container.
@Suite("Ignored uploads: local only, held, leaving the synced set", .serialized)
struct IgnoredUploadsTests {
    static let defaults = MountIgnores.Settings(defaults: true, synced: true, local: nil)

    static func withLocal(_ text: String) -> MountIgnores.Settings {
        MountIgnores.Settings(defaults: true, synced: true, local: IgnoreFile(parsing: text))
    }

    /// Rewrites the start of an existing file (same length: no truncation involved).
    func overwrite(_ fixture: FileSystemFixture, _ name: String, _ text: String) throws {
        let handle = try fixture.fs.open(try fixture.lookupIno(name), flags: O_RDWR, caller: testCaller)
        try fixture.write(handle, bytes(text), at: 0)
        fixture.fs.fileIO.release(handle)
    }

    func unlink(_ fixture: FileSystemFixture, _ name: String) throws {
        try fixture.fs.unlink(parent: .root, name: FileName(name), caller: testCaller)
    }

    func rename(_ fixture: FileSystemFixture, _ from: String, _ to: String) throws {
        try fixture.fs.rename(parent: .root, name: FileName(from), newParent: .root, newName: FileName(to), flags: [])
    }

    func id(_ fixture: FileSystemFixture, _ name: String) throws -> FileID {
        try #require(fixture.fileID(of: try fixture.lookupIno(name)))
    }

    @Test func editorFilesStayLocalWhileANormalFileSyncs() async throws {
        let pair = try SyncedPair()
        pair.a.fs.configureIgnores(Self.defaults)
        try pair.a.makeFile(".notes.txt.swp", contents: bytes("swap"))
        try pair.a.makeFile(".~lock.report.odt#", contents: bytes("lock"))
        try pair.a.makeFile("notes.txt", contents: bytes("text"))
        try await eventually("notes.txt on B") { try contents(pair.b, "notes.txt") == bytes("text") }
        let swap = try id(pair.a, ".notes.txt.swp")
        try await eventually("both editor files held on A") { pair.a.fs.outbox.heldIDs.count == 2 }
        #expect(try pair.b.childNames() == ["notes.txt"])
        #expect(try await pair.container.entry(swap) == nil, "never uploaded")
        #expect(pair.a.fs.outbox.count == 2, "kept queued (and stored)")
        #expect(pair.a.fs.contentState(ofFileID: swap) == .ignored)
        try await eventually("A up to date with its ignored files") { pair.engineA.rounds.isUpToDateNow }
        let status = pair.engineA.status()
        #expect(status.pendingEntries == 0)
        #expect(status.ignored?.entries == 2)
        #expect(status.ignored?.bySyncedFiles == [])
    }

    @Test func aSyncedFileThatBecomesIgnoredStaysAsItIsInTheContainer() async throws {
        let pair = try SyncedPair()
        try pair.a.makeFile("run.log", contents: bytes("v1"))
        try await eventually("run.log on B") { try contents(pair.b, "run.log") == bytes("v1") }
        let log = try id(pair.a, "run.log")
        pair.a.fs.configureIgnores(Self.withLocal("*.log"))
        try overwrite(pair.a, "run.log", "v2")
        try pair.a.makeFile("after-edit.txt", contents: bytes("x"))
        try await eventually("after-edit.txt on B") { try contents(pair.b, "after-edit.txt") == bytes("x") }
        try await eventually("the edit held") { pair.a.fs.outbox.isHeld(log) }
        #expect(try contents(pair.b, "run.log") == bytes("v1"), "the edit is not uploaded")

        try unlink(pair.a, "run.log")
        try pair.a.makeFile("after-delete.txt", contents: bytes("y"))
        try await eventually("after-delete.txt on B") { try contents(pair.b, "after-delete.txt") == bytes("y") }
        try await eventually("the delete held") { pair.a.fs.outbox.isHeld(log) }
        #expect(try contents(pair.b, "run.log") == bytes("v1"), "ignoring never deletes in the container")
        let entry = try #require(try await pair.container.entry(log))
        #expect(!entry.isDeleted)
    }

    @Test func aRenameToAnIgnoredNameLeavesTheSyncedSetAndKeepsTheFileHere() async throws {
        let pair = try SyncedPair()
        pair.a.fs.configureIgnores(Self.defaults)
        try pair.a.makeFile("draft.txt", contents: bytes("v1"))
        try await eventually("draft.txt on B") { try contents(pair.b, "draft.txt") == bytes("v1") }
        let draft = try id(pair.a, "draft.txt")
        try rename(pair.a, "draft.txt", "draft.txt~")
        try await eventually("gone from B") { try pair.b.childNames().isEmpty }
        let entry = try #require(try await pair.container.entry(draft))
        #expect(entry.isDeleted, "deleted in the container (its history keeps it)")
        #expect(try contents(pair.a, "draft.txt~") == bytes("v1"), "still here")
        try await eventually("local only now, held as ignored") { pair.a.fs.contentState(ofFileID: draft) == .ignored }
    }

    @Test func aRemoteEntryAtAnIgnoredPathIsShownAndApplied() async throws {
        let pair = try SyncedPair()
        pair.a.fs.configureIgnores(Self.withLocal("*.log"))
        try pair.b.makeFile("server.log", contents: bytes("v1"))
        try await eventually("server.log on A") { try contents(pair.a, "server.log") == bytes("v1") }
        try overwrite(pair.b, "server.log", "v2")
        try await eventually("B's edit applied on A") { try contents(pair.a, "server.log") == bytes("v2") }
        #expect(pair.a.fs.outbox.items.isEmpty, "applying a remote change queues nothing to hold")
    }

    @Test func theVimSaveKeepsTheFileSyncedWithoutAConflictCopy() async throws {
        let pair = try SyncedPair()
        pair.a.fs.configureIgnores(Self.defaults)
        try pair.a.makeFile("notes.txt", contents: bytes("one"))
        try await eventually("notes.txt on B") { try contents(pair.b, "notes.txt") == bytes("one") }
        // vim's backup-then-write: notes.txt → notes.txt~, write a new notes.txt, remove the backup.
        try rename(pair.a, "notes.txt", "notes.txt~")
        try pair.a.makeFile("notes.txt", contents: bytes("two"))
        try unlink(pair.a, "notes.txt~")
        try await eventually("the new notes.txt on B") { try contents(pair.b, "notes.txt") == bytes("two") }
        try await pair.settle()
        #expect(try pair.b.childNames() == ["notes.txt"])
        #expect(try pair.a.childNames() == ["notes.txt"])
    }

    @Test func changedRulesLetAHeldChangeGo() async throws {
        let pair = try SyncedPair()
        pair.a.fs.configureIgnores(Self.defaults)
        try pair.a.makeFile("keep.tmp~", contents: bytes("k"))
        try await eventually("held") { pair.a.fs.outbox.heldIDs.count == 1 }
        pair.a.fs.configureIgnores(.none)
        try await eventually("keep.tmp~ on B once nothing is ignored") {
            try contents(pair.b, "keep.tmp~") == bytes("k")
        }
        try await pair.settle()
    }

    @Test func aHeldChangeSurvivesARestartAndIsHeldAgain() async throws {
        let pair = try SyncedPair()
        pair.b.fs.configureIgnores(Self.defaults)
        try pair.b.makeFile(".draft.swp", contents: bytes("s"))
        let swap = try id(pair.b, ".draft.swp")
        try await eventually("held on B") { pair.b.fs.outbox.isHeld(swap) }
        try pair.restartB(ignores: Self.defaults)
        #expect(pair.b.fs.outbox.items.map(\.fileID) == [swap], "the change is still queued after the restart")
        try await eventually("held again after the restart") { pair.b.fs.outbox.isHeld(swap) }
        try pair.b.makeFile("after.txt", contents: bytes("a"))
        try await eventually("after.txt on A") { try contents(pair.a, "after.txt") == bytes("a") }
        #expect(try pair.a.childNames() == ["after.txt"])
        #expect(try await pair.container.entry(swap) == nil)
    }

    @Test func aRemoteChangeDoesNotOverwriteAHeldLocalEdit() async throws {
        let pair = try SyncedPair()
        try pair.a.makeFile("run.log", contents: bytes("v1"))
        try await eventually("run.log on B") { try contents(pair.b, "run.log") == bytes("v1") }
        pair.b.fs.configureIgnores(Self.withLocal("*.log"))
        try overwrite(pair.b, "run.log", "mi")
        try await eventually("B's edit held") { pair.b.fs.outbox.isHeld(try id(pair.b, "run.log")) }
        try overwrite(pair.a, "run.log", "th")
        try pair.a.makeFile("after.txt", contents: bytes("a"))
        try await eventually("A's later file on B") { try contents(pair.b, "after.txt") == bytes("a") }
        #expect(try contents(pair.b, "run.log") == bytes("mi"), "the held local edit stays")
        #expect(try contents(pair.a, "run.log") == bytes("th"))
    }

    /// A synced ignore file's rules follow its folder when the folder is renamed: they are read
    /// again, and apply below the new name (failed before: they stayed keyed to the old name).
    @Test func aRenamedFolderKeepsItsSyncedIgnoreRules() async throws {
        let pair = try SyncedPair()
        pair.a.fs.configureIgnores(Self.defaults)
        let web = try pair.a.mkdir("web")
        try pair.a.makeFile(".syncfs-ignore", in: web, contents: bytes("cache/\n"))
        try await eventually("the rules of web/ read") { pair.a.fs.ignores.current.synced["web"] != nil }
        try pair.a.fs.rename(
            parent: .root, name: FileName("web"), newParent: .root, newName: FileName("site"), flags: [])
        try await eventually("the rules read again under site/") {
            pair.a.fs.ignores.current.synced["site"] != nil && pair.a.fs.ignores.current.synced["web"] == nil
        }
        let cache = try pair.a.mkdir("cache", in: web)
        try pair.a.makeFile("page.html", in: cache, contents: bytes("cached"))
        try pair.a.makeFile("index.html", in: web, contents: bytes("index"))
        try await eventually("index.html on B") {
            let site = try pair.b.lookupIno("site")
            return try pair.b.childNames(of: site).contains("index.html")
        }
        try await eventually("the cache folder held on A") { pair.a.fs.outbox.heldIDs.count >= 1 }
        #expect(try pair.b.childNames(of: try pair.b.lookupIno("site")).sorted() == [".syncfs-ignore", "index.html"])
    }

    /// An edit of a file in a folder renamed to an ignored name is held: the container keeps the
    /// folder and its files (failed before: each edited file was deleted in the container).
    @Test func anEditInAFolderRenamedToAnIgnoredNameIsHeldNotDeleted() async throws {
        let pair = try SyncedPair()
        pair.a.fs.configureIgnores(Self.defaults)
        let photos = try pair.a.mkdir("photos")
        try pair.a.makeFile("a.jpg", in: photos, contents: bytes("v1"))
        try await eventually("photos/a.jpg on B") { try contents(pair.b, "photos/a.jpg") == bytes("v1") }
        let photo = try #require(pair.a.fileID(of: try pair.a.lookupIno("a.jpg", in: photos)))
        try rename(pair.a, "photos", "photos~")
        let handle = try pair.a.fs.open(try pair.a.lookupIno("a.jpg", in: photos), flags: O_RDWR, caller: testCaller)
        try pair.a.write(handle, bytes("v2"), at: 0)
        pair.a.fs.fileIO.release(handle)
        try pair.a.makeFile("after.txt", contents: bytes("x"))
        try await eventually("after.txt on B") { try contents(pair.b, "after.txt") == bytes("x") }
        try await eventually("the edit held") { pair.a.fs.outbox.isHeld(photo) }
        let entry = try #require(try await pair.container.entry(photo))
        #expect(!entry.isDeleted, "the container keeps the file of the renamed folder")
        #expect(try contents(pair.b, "photos/a.jpg") == bytes("v1"))
    }

    /// A local-only ignored folder renamed to a synced name uploads with what is in it (failed
    /// before: its files stayed held until a restart).
    @Test func anIgnoredFolderRenamedToASyncedNameUploadsItsFiles() async throws {
        let pair = try SyncedPair()
        pair.a.fs.configureIgnores(Self.withLocal("node_modules/"))
        let modules = try pair.a.mkdir("node_modules")
        try pair.a.makeFile("index.js", in: modules, contents: bytes("js"))
        try await eventually("the folder and its file held") { pair.a.fs.outbox.heldIDs.count == 2 }
        try rename(pair.a, "node_modules", "deps")
        try await eventually("deps/index.js on B") { try contents(pair.b, "deps/index.js") == bytes("js") }
        try await eventually("nothing held any more") { pair.a.fs.outbox.heldIDs.isEmpty }
    }

    /// A file renamed to an ignored name while another machine edits it: both stay, the edit in
    /// the container and the renamed copy here (failed before: the remote edit replaced the
    /// local content and moved the file back).
    @Test func aRenameToAnIgnoredNameMeetingARemoteEditKeepsBoth() async throws {
        let base = InMemoryContainer()
        let viewOfA = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfA: viewOfA)
        pair.a.fs.configureIgnores(Self.defaults)
        try pair.a.makeFile("draft.txt", contents: bytes("v1"))
        try await eventually("draft.txt on B") { try contents(pair.b, "draft.txt") == bytes("v1") }
        try await pair.settle()
        let draft = try id(pair.a, "draft.txt")
        // A stops hearing the feed: B's edit reaches the container before A's rename is decided.
        viewOfA.startOutage([.changes, .waitForChanges])
        try overwrite(pair.b, "draft.txt", "v2")
        try await eventually("B's edit committed") { pair.b.fs.outbox.items.isEmpty }
        try rename(pair.a, "draft.txt", "draft.txt~")
        try overwrite(pair.a, "draft.txt~", "mi")
        try await eventually("the rename held on A") { pair.a.fs.outbox.isHeld(draft) }
        viewOfA.endOutage()
        try pair.a.makeFile("after.txt", contents: bytes("x"))
        try await eventually("after.txt on B") { try contents(pair.b, "after.txt") == bytes("x") }
        #expect(try contents(pair.a, "draft.txt~") == bytes("mi"), "the local content stays here")
        #expect(try contents(pair.b, "draft.txt") == bytes("v2"), "the remote edit stays in the container")
        let entry = try #require(try await pair.container.entry(draft))
        #expect(!entry.isDeleted)
    }
}
