import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// What a refused `exclude` or `include` said, or nil if it went through.
private func refusal(_ body: () throws -> Void) -> SelectiveSync.Refusal? {
    do {
        try body()
        return nil
    } catch {
        return error as? SelectiveSync.Refusal
    }
}

extension FileSystemFixture {
    /// The node with `id` is known here (linked or out of sight).
    func knows(_ id: FileID) -> Bool { fs.live.transact { $0.node(withID: id) != nil } }

    /// The path of `id` below the mount point if it is in sight, else nil.
    func visiblePath(of id: FileID) -> String? {
        fs.live.transact { tree in
            guard let node = tree.node(withID: id), !node.isUnlinked, !tree.isExcluded(node) else { return nil }
            return tree.displayPath(of: node)
        }
    }

    func isPlaceholder(_ id: FileID) -> Bool {
        fs.live.transact { $0.node(withID: id)?.isPlaceholder ?? false }
    }
}

@Suite("Selective sync: a folder kept off one device", .serialized)
struct SelectiveSyncTests {
    /// A and B share `docs/a.txt` (downloaded on B); returns the IDs of docs and a.txt.
    private func sharedFolder(_ pair: SyncedPair) async throws -> (docs: FileID, file: FileID) {
        let docs = try pair.a.mkdir("docs")
        let file = try pair.a.makeFile("a.txt", in: docs, contents: bytes("first"))
        try await eventually("docs/a.txt on B") { try contents(pair.b, "docs/a.txt") == bytes("first") }
        try await pair.settle()
        return (try #require(pair.a.fileID(of: docs)), try #require(pair.a.fileID(of: file)))
    }

    @Test func excludingHidesTheFolderFreesItsContentAndChangesNothingElsewhere() async throws {
        let pair = try SyncedPair()
        let (docs, file) = try await sharedFolder(pair)
        let cached = try #require(pair.b.cacheFilePath(of: pair.b.fs.lookup(path: "docs/a.txt")))
        #expect(FileManager.default.fileExists(atPath: cached))
        let excluded = try pair.b.fs.selectiveSync.exclude("docs")
        #expect(excluded == SelectiveSync.Excluded(path: "docs", files: 1, bytes: 5))
        #expect(try pair.b.childNames() == [])
        #expect(throws: FSError.notFound) { try pair.b.lookupIno("docs") }
        #expect(!FileManager.default.fileExists(atPath: cached), "the content is freed")
        #expect(pair.b.isPlaceholder(file))
        #expect(pair.b.fs.outbox.items.isEmpty, "nothing is queued")
        #expect(pair.engineB.status().excluded == ["docs"])
        let counts = pair.engineB.status().files
        #expect(counts.local + counts.online == 0, "files out of sight are not counted: \(counts)")
        // The container and A still have it.
        let remote = try #require(try await pair.container.entry(docs))
        #expect(!remote.isDeleted)
        #expect(try contents(pair.a, "docs/a.txt") == bytes("first"))
    }

    @Test func remoteChangesBelowAreAppliedOutOfSightAndIncludeBringsThemBack() async throws {
        let pair = try SyncedPair()
        let (docs, file) = try await sharedFolder(pair)
        _ = try pair.b.fs.selectiveSync.exclude("docs")
        let docsOnA = try pair.a.lookupIno("docs")
        let added = try #require(pair.a.fileID(of: try pair.a.makeFile("b.txt", in: docsOnA, contents: bytes("new"))))
        let writer = try pair.a.fs.open(try pair.a.lookupIno("a.txt", in: docsOnA), flags: O_RDWR, caller: testCaller)
        try pair.a.write(writer, bytes("FIRST, edited"), at: 0)
        pair.a.fs.fileIO.release(writer)
        try await pair.settle()
        let version = try #require(try await pair.container.entry(file)).version
        try await eventually("B applied both changes") {
            pair.b.knows(added) && pair.b.fs.live.transact { $0.bases[file]?.version } == version
        }
        #expect(try pair.b.childNames() == [], "not visible")
        #expect(pair.b.isPlaceholder(added) && pair.b.isPlaceholder(file), "nothing downloaded")
        try pair.b.fs.selectiveSync.include("docs")
        #expect(try pair.b.childNames() == ["docs"])
        #expect(try pair.b.childNames(of: pair.b.lookupIno("docs")) == ["a.txt", "b.txt"])
        #expect(try contents(pair.b, "docs/a.txt") == bytes("FIRST, edited"))
        #expect(try contents(pair.b, "docs/b.txt") == bytes("new"))
        #expect(pair.engineB.status().excluded == [])
        #expect(pair.b.visiblePath(of: docs) == "docs")
    }

    @Test func theExclusionFollowsARemoteRenameAndEndsWithARemoteDelete() async throws {
        let pair = try SyncedPair()
        let (docs, _) = try await sharedFolder(pair)
        _ = try pair.b.fs.selectiveSync.exclude("docs")
        try pair.a.fs.rename(
            parent: .root, name: FileName("docs"), newParent: .root, newName: FileName("papers"), flags: [])
        try await eventually("B follows the rename") { pair.b.fs.selectiveSync.excludedPaths() == ["papers"] }
        #expect(try pair.b.childNames() == [])
        let papers = try pair.a.lookupIno("papers")
        try pair.a.fs.unlink(parent: papers, name: FileName("a.txt"))
        try pair.a.fs.rmdir(parent: .root, name: FileName("papers"))
        try await eventually("the exclusion ends") { pair.b.fs.selectiveSync.excludedPaths() == [] }
        #expect(!pair.b.knows(docs) || pair.b.visiblePath(of: docs) == nil)
        #expect(try pair.b.childNames() == [])
    }

    @Test func anEntryMovedInDisappearsAndOneMovedOutAppears() async throws {
        let pair = try SyncedPair()
        let (_, file) = try await sharedFolder(pair)
        let top = try #require(pair.a.fileID(of: try pair.a.makeFile("top.txt", contents: bytes("top"))))
        try await eventually("top.txt on B") { try contents(pair.b, "top.txt") == bytes("top") }
        _ = try pair.b.fs.selectiveSync.exclude("docs")
        let docsOnA = try pair.a.lookupIno("docs")
        try pair.a.fs.rename(
            parent: .root, name: FileName("top.txt"), newParent: docsOnA, newName: FileName("top.txt"), flags: [])
        try await eventually("top.txt gone on B") { try pair.b.childNames() == [] }
        #expect(pair.b.isPlaceholder(top), "its content freed with the folder's")
        #expect(pair.b.fs.outbox.items.isEmpty, "no delete queued")
        #expect(try await pair.container.entry(top)?.isDeleted == false)
        try pair.a.fs.rename(
            parent: docsOnA, name: FileName("a.txt"), newParent: .root, newName: FileName("out.txt"), flags: [])
        try await eventually("out.txt appears on B") { try pair.b.childNames() == ["out.txt"] }
        #expect(pair.b.isPlaceholder(file))
        #expect(try contents(pair.b, "out.txt") == bytes("first"))
    }

    @Test func excludingRefusesPendingChangesAndOpenFilesAndBadPaths() async throws {
        let pair = try SyncedPair()
        _ = try await sharedFolder(pair)
        let docsOnB = try pair.b.lookupIno("docs")
        let handle = try pair.b.fs.open(try pair.b.lookupIno("a.txt", in: docsOnB), flags: O_RDONLY, caller: testCaller)
        let open = refusal { _ = try pair.b.fs.selectiveSync.exclude("docs") }
        #expect(
            open?.retryable == true && open?.message.contains("1 open below (EBUSY)") == true,
            "\(String(describing: open))")
        pair.b.fs.fileIO.release(handle)
        try pair.withEngineAStopped {
            try pair.a.makeFile("pending.txt", in: try pair.a.lookupIno("docs"), contents: bytes("x"))
            let pending = refusal { _ = try pair.a.fs.selectiveSync.exclude("docs") }
            #expect(
                pending?.retryable == true
                    && pending?.message
                        == "1 change below not uploaded yet; wait for sync or run `syncfs-mount sync` first",
                "\(String(describing: pending))")
            #expect(try pair.a.childNames() == ["docs"], "nothing happened")
        }
        #expect(
            refusal { _ = try pair.b.fs.selectiveSync.exclude("") }?.message == "the mount's root cannot be excluded")
        #expect(
            refusal { _ = try pair.b.fs.selectiveSync.exclude("docs/a.txt") }?.message.hasPrefix("not a folder") == true
        )
        #expect(refusal { _ = try pair.b.fs.selectiveSync.exclude("nothing") }?.message == "no such folder")
        #expect(refusal { _ = try pair.b.fs.selectiveSync.exclude("docs/../docs") }?.retryable == false)
        #expect(
            refusal { _ = try pair.b.fs.selectiveSync.include("docs") }?.message == "not excluded (nothing is excluded)"
        )
        #expect(pair.engineB.status().excluded == [])
    }

    /// Ignored entries below exist only here: `exclude` would free them, so it refuses, naming
    /// them (failed before: the refusal said "not uploaded yet; wait for sync", which never ends).
    @Test func excludingRefusesAFolderHoldingIgnoredLocalOnlyEntries() async throws {
        let pair = try SyncedPair()
        _ = try await sharedFolder(pair)
        pair.b.fs.configureIgnores(MountIgnores.Settings(defaults: true, synced: true, local: nil))
        let docs = try pair.b.lookupIno("docs")
        let store = try #require(pair.b.fileID(of: try pair.b.makeFile(".DS_Store", in: docs, contents: bytes("x"))))
        try await eventually("held as ignored") { pair.b.fs.outbox.isHeld(store) }
        let refused = refusal { _ = try pair.b.fs.selectiveSync.exclude("docs") }
        #expect(
            refused?.message.hasPrefix("1 ignored entry below exists only on this device") == true,
            "\(refused.map(\.message) ?? "none")")
        #expect(refused?.retryable == false)
        #expect(try contents(pair.b, "docs/.DS_Store") == bytes("x"), "nothing freed")
    }

    @Test func theExclusionSurvivesARestart() async throws {
        let pair = try SyncedPair()
        let (docs, _) = try await sharedFolder(pair)
        _ = try pair.b.fs.selectiveSync.exclude("docs")
        try pair.restartB()
        #expect(try pair.b.childNames() == [])
        #expect(pair.b.knows(docs), "kept out of sight, not dropped as an orphan")
        #expect(pair.b.fs.selectiveSync.excludedPaths() == ["docs"])
        try pair.b.fs.selectiveSync.include("docs")
        #expect(try contents(pair.b, "docs/a.txt") == bytes("first"))
    }

    @Test func aLocalEntryAtTheExcludedNameBecomesASelectiveSyncConflictCopy() async throws {
        let pair = try SyncedPair()
        let (docs, _) = try await sharedFolder(pair)
        _ = try pair.b.fs.selectiveSync.exclude("docs")
        let local = try pair.b.mkdir("docs")
        try pair.b.makeFile("mine.txt", in: local, contents: bytes("mine"))
        let localID = try #require(pair.b.fileID(of: local))
        try await pair.settle()
        try await eventually("renamed aside on B") {
            pair.b.visiblePath(of: localID).map { $0.hasPrefix("docs (conflict from ") } ?? false
        }
        let note = try #require(pair.b.fs.live.transact { $0.node(withID: localID)?.xattrs[ConflictNote.attribute] })
        #expect(String(decoding: note, as: UTF8.self).contains("selective sync conflict"))
        let copyName = try #require(pair.b.visiblePath(of: localID))
        try await eventually("A has both") { try pair.a.childNames() == ["docs", copyName].sorted() }
        #expect(try contents(pair.a, "docs/a.txt") == bytes("first"), "the excluded folder is untouched")
        #expect(try contents(pair.a, copyName + "/mine.txt") == bytes("mine"))
        try pair.b.fs.selectiveSync.include("docs")
        #expect(try pair.b.childNames() == ["docs", copyName].sorted())
        #expect(pair.b.visiblePath(of: docs) == "docs")
    }

    @Test func includeMovesALocalEntryNotYetUploadedAside() async throws {
        let pair = try SyncedPair()
        let (docs, _) = try await sharedFolder(pair)
        _ = try pair.a.fs.selectiveSync.exclude("docs")
        try pair.withEngineAStopped {
            let local = try pair.a.makeFile("docs", contents: bytes("a file"))
            let localID = try #require(pair.a.fileID(of: local))
            try pair.a.fs.selectiveSync.include("docs")
            #expect(pair.a.visiblePath(of: docs) == "docs")
            let copy = try #require(pair.a.visiblePath(of: localID))
            #expect(copy.hasPrefix("docs (conflict from "))
            #expect(try contents(pair.a, copy) == bytes("a file"))
        }
        try await pair.settle()
        #expect(try await pair.container.entry(docs)?.isDeleted == false)
    }

    /// The folder holding an excluded folder is not empty: the container still holds it there.
    @Test func theFolderHoldingAnExcludedFolderIsNotEmpty() async throws {
        let pair = try SyncedPair()
        let outer = try pair.a.mkdir("outer")
        let inner = try pair.a.mkdir("inner", in: outer)
        try pair.a.makeFile("x.txt", in: inner, contents: bytes("x"))
        try pair.a.mkdir("empty")
        try await pair.settle()
        _ = try pair.a.fs.selectiveSync.exclude("outer/inner")
        #expect(try pair.a.childNames(of: outer) == [])
        #expect(throws: FSError.notEmpty) { try pair.a.fs.rmdir(parent: .root, name: FileName("outer")) }
        #expect(throws: FSError.notEmpty) {
            try pair.a.fs.rename(
                parent: .root, name: FileName("empty"), newParent: .root, newName: FileName("outer"), flags: [])
        }
        try pair.a.fs.selectiveSync.include("outer/inner")
        #expect(try contents(pair.a, "outer/inner/x.txt") == bytes("x"))
    }

    /// Starts a background download of `file` on B whose chunks take 2 s to arrive; returns it
    /// once it runs.
    private func slowDownload(of file: FileID, on pair: SyncedPair, through viewOfB: FaultInjectingContainer)
        async throws -> Hydration
    {
        try await pair.settle()
        try await eventually("the file known on B") { pair.b.knows(file) }
        viewOfB.delay(.chunk, by: .seconds(2))
        pair.engineB.downloader.request([file])
        try await eventually("B downloads") { pair.b.fs.live.transact { $0.node(withID: file)?.hydration != nil } }
        return try #require(pair.b.fs.live.transact { $0.node(withID: file)?.hydration })
    }

    /// Lets the chunks through again and expects the stopped download `running` to end soon.
    private func expectEnded(_ running: Hydration, once viewOfB: FaultInjectingContainer) async {
        viewOfB.delay(.chunk, by: nil)
        let deadline = ContinuousClock.now + .seconds(20)
        let ended = await waiting {
            do throws(FSError) {
                try running.waitUntilFinished(stops: { ContinuousClock.now >= deadline })
                return "finished"
            } catch {
                return "\(error)"
            }
        }
        #expect(ContinuousClock.now < deadline, "the stopped download ended (\(ended))")
    }

    /// A background download below the folder stops at `exclude`: no content arrives out of sight.
    @Test func aDownloadRunningBelowStopsAtExclude() async throws {
        let base = InMemoryContainer()
        let viewOfB = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: viewOfB)
        let docs = try pair.a.mkdir("docs")
        let file = try #require(
            pair.a.fileID(of: try pair.a.makeFile("big.bin", in: docs, contents: Array(repeating: 7, count: 300_000))))
        let running = try await slowDownload(of: file, on: pair, through: viewOfB)
        _ = try pair.b.fs.selectiveSync.exclude("docs")
        #expect(pair.b.fs.live.transact { $0.node(withID: file)?.hydration == nil })
        await expectEnded(running, once: viewOfB)
        #expect(pair.b.isPlaceholder(file), "nothing downloaded out of sight")
    }

    /// A background download of a file that another device moves into a folder excluded here
    /// stops as the file disappears: its content does not arrive out of sight.
    @Test func aDownloadRunningStopsWhenItsFileMovesIntoAnExcludedFolder() async throws {
        let base = InMemoryContainer()
        let viewOfB = FaultInjectingContainer(base)
        let pair = try SyncedPair(container: base, viewOfB: viewOfB)
        let (docs, _) = try await sharedFolder(pair)
        _ = try pair.b.fs.selectiveSync.exclude("docs")
        let file = try #require(
            pair.a.fileID(of: try pair.a.makeFile("big.bin", contents: Array(repeating: 7, count: 300_000))))
        let running = try await slowDownload(of: file, on: pair, through: viewOfB)
        try pair.a.fs.rename(
            parent: .root, name: FileName("big.bin"), newParent: try pair.a.lookupIno("docs"),
            newName: FileName("big.bin"), flags: [])
        try await eventually("big.bin gone on B") { try pair.b.childNames() == [] }
        #expect(pair.b.fs.live.transact { $0.node(withID: file)?.hydration == nil }, "the download stopped")
        await expectEnded(running, once: viewOfB)
        #expect(pair.b.isPlaceholder(file), "nothing downloaded out of sight")
        #expect(pair.b.fs.live.transact { $0.node(withID: file)?.parent } != nil)
        #expect(try await pair.container.entry(docs)?.isDeleted == false)
    }
}
