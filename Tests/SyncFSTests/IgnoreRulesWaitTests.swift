import Glibc
import SyncBackend
import SyncBackendTesting
import SyncMerge
import TestSupport
import Testing

@testable import SyncFS

/// Changes wait for the synced ignore rules rather than go by guess (doc/SEMANTICS.md, "Ignored
/// paths on a mount"): before the first read, while a touched file is read, while a file cannot
/// be read or is open for writing.
@Suite("Ignore rules: changes wait for them, never by guess", .serialized)
struct IgnoreRulesWaitTests {
    static let defaults = MountIgnores.Settings(defaults: true, synced: true, local: nil)

    /// A pair whose B reads chunks through `viewOfB` (delays and outages).
    static func pair() throws -> (SyncedPair, FaultInjectingContainer) {
        let container = InMemoryContainer()
        let viewOfB = FaultInjectingContainer(container)
        let pair = try SyncedPair(container: container, viewOfB: viewOfB)
        pair.b.fs.configureIgnores(defaults)
        return (pair, viewOfB)
    }

    func id(_ fixture: FileSystemFixture, _ name: String) throws -> FileID {
        try #require(fixture.fileID(of: try fixture.lookupIno(name)))
    }

    /// Whether the container still has `id`, not deleted.
    func liveInContainer(_ pair: SyncedPair, _ id: FileID) async throws -> Bool {
        guard let entry = try await pair.container.entry(id) else { return false }
        return !entry.isDeleted
    }

    /// B has `run.log` from A under a root `.syncfs-ignore` of `*.log`, read, and deleted it here:
    /// the delete is held. Returns its ID.
    func heldDeleteOfRunLog(_ pair: SyncedPair) async throws -> FileID {
        try pair.a.makeFile(".syncfs-ignore", contents: bytes("*.log\n"))
        try pair.a.makeFile("run.log", contents: bytes("v1"))
        try await eventually("the rules and run.log on B") {
            pair.b.fs.ignores.current.synced[""] != nil && (try? contents(pair.b, "run.log")) == bytes("v1")
        }
        let run = try id(pair.b, "run.log")
        try pair.b.fs.unlink(parent: .root, name: FileName("run.log"), caller: testCaller)
        try await eventually("the delete held on B") { pair.b.fs.outbox.isHeld(run) }
        return run
    }

    /// The uploader waits for the first read of the synced rules (failed before: a delete of
    /// an ignored entry taken before the read went to the container).
    @Test func aDeleteWaitsForTheSyncedRulesBeingRead() async throws {
        let (pair, viewOfB) = try Self.pair()
        viewOfB.delay(.chunk, by: .seconds(3))
        try pair.a.makeFile(".syncfs-ignore", contents: bytes("*.log\n"))
        try pair.a.makeFile("run.log", contents: bytes("v1"))
        try await eventually("the ignore file and run.log arrived on B") {
            (try? pair.b.lookupIno(".syncfs-ignore")) != nil && (try? pair.b.lookupIno("run.log")) != nil
        }
        let run = try id(pair.b, "run.log")
        try pair.b.fs.unlink(parent: .root, name: FileName("run.log"), caller: testCaller)
        try await eventually("the rules read on B, or the delete sent", timeout: 20) {
            let deleted = try await !liveInContainer(pair, run)
            return deleted || pair.b.fs.outbox.isHeld(run)
        }
        #expect(try await liveInContainer(pair, run), "the container keeps the ignored entry")
        #expect(pair.b.fs.outbox.isHeld(run))
    }

    /// A synced ignore file that cannot be read any more (here: grown past the largest read)
    /// keeps the rules last read of it (failed before: its rules vanished and a held delete
    /// went).
    @Test func anIgnoreFileThatCannotBeReadKeepsItsRules() async throws {
        let (pair, _) = try Self.pair()
        let run = try await heldDeleteOfRunLog(pair)
        let comment = "# " + String(repeating: "x", count: 1000) + "\n"
        let large = "*.log\n" + String(repeating: comment, count: IgnoreFilesReader.largestFile / 1000)
        let handle = try pair.a.fs.open(try pair.a.lookupIno(".syncfs-ignore"), flags: O_RDWR, caller: testCaller)
        try pair.a.write(handle, bytes(large), at: 0)
        pair.a.fs.fileIO.release(handle)
        try await eventually("the large version read on B") {
            pair.b.fs.rulesWatch.errors.contains { $0.path == ".syncfs-ignore" }
        }
        try pair.b.makeFile("after.txt", contents: bytes("a"))
        try await eventually("after.txt on A") { (try? contents(pair.a, "after.txt")) == bytes("a") }
        #expect(try await liveInContainer(pair, run))
        #expect(pair.b.fs.outbox.isHeld(run))
        #expect(pair.b.fs.ignores.current.syncedTexts[""] == "*.log\n", "the text last read")
    }

    /// An ignore file open for writing is not read until closed: the rules last read stay
    /// (failed before: a read of the half-written file dropped them and a held delete went).
    @Test func anIgnoreFileOpenForWritingKeepsItsRules() async throws {
        let (pair, _) = try Self.pair()
        let run = try await heldDeleteOfRunLog(pair)
        let ignoreFile = try pair.b.lookupIno(".syncfs-ignore")
        let handle = try pair.b.fs.open(ignoreFile, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try pair.b.write(handle, bytes("#"), at: 0)
        pair.b.fs.rulesWatch.touched()
        try pair.b.makeFile("after.txt", contents: bytes("a"))
        try await eventually("after.txt on A") { (try? contents(pair.a, "after.txt")) == bytes("a") }
        #expect(try await liveInContainer(pair, run))
        #expect(pair.b.fs.outbox.isHeld(run))
        try pair.b.write(handle, bytes("*.log\n#"), at: 0)
        pair.b.fs.fileIO.release(handle)
        try await eventually("read at its close") { pair.b.fs.ignores.current.syncedTexts[""] == "*.log\n#" }
    }

    /// A change waiting for an unreadable ignore file counts as pending, not ignored (failed
    /// before: it was shown as ignored and the mount as up to date).
    @Test func aChangeWaitingForTheRulesIsPending() async throws {
        let (pair, viewOfB) = try Self.pair()
        let web = try pair.a.mkdir("web")
        try pair.a.makeFile("index.html", in: web, contents: bytes("i"))
        try await eventually("web/index.html on B") {
            (try? pair.b.lookupIno("index.html", in: try pair.b.lookupIno("web"))) != nil
        }
        viewOfB.startOutage([.chunk])
        try pair.a.makeFile(".syncfs-ignore", in: web, contents: bytes("*.tmp\n"))
        try await eventually("web's ignore file unreadable on B") {
            pair.b.fs.ignores.current.unreadable.contains("web")
        }
        let new = try pair.b.makeFile("new.txt", in: try pair.b.lookupIno("web"), contents: bytes("n"))
        let newID = try #require(pair.b.fileID(of: new))
        try await eventually("new.txt waits") { pair.b.fs.outbox.isWaitingForRules(newID) }
        #expect(!pair.b.fs.outbox.isHeld(newID), "not ignored")
        #expect(pair.engineB.status().pendingEntries == 1)
        #expect(pair.engineB.status().ignored?.entries ?? 0 == 0)
        #expect(!pair.engineB.rounds.isUpToDateNow)
        #expect(pair.b.fs.contentState(ofFileID: newID) != .ignored)
        viewOfB.endOutage()
        try await eventually("new.txt on A once the rules are read") {
            (try? contents(pair.a, "web/new.txt")) == bytes("n")
        }
    }

    /// The cache budget and `evict` never take a synced ignore file's content (failed before: it
    /// was evicted like any file, and its rules were unreadable while offline).
    @Test func anIgnoreFileIsNotEvicted() async throws {
        let (pair, _) = try Self.pair()
        try pair.a.makeFile(".syncfs-ignore", contents: bytes("*.log\n"))
        try pair.a.makeFile(".syncfs-rules", contents: bytes("*.txt: newest\n"))
        try await eventually("both read on B") {
            pair.b.fs.ignores.current.synced[""] != nil && (try? contents(pair.b, ".syncfs-rules")) != nil
        }
        try await pair.settle()
        let outcomes = try pair.b.fs.residency.eviction.evict(below: .root)
        for (path, outcome) in outcomes {
            guard case .refused = outcome else {
                Issue.record("\(path) was evicted: \(outcome)")
                continue
            }
        }
        #expect(pair.b.fs.residency.eviction.enforceBudget(0) == 0)
        let ignoreFile = try pair.b.lookupIno(".syncfs-ignore")
        #expect(!pair.b.fs.live.transact { $0.nodes[ignoreFile]!.isPlaceholder })
    }
}
