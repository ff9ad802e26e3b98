import Logging
import SyncBackend
import SyncMerge
import TestSupport
import Testing

@testable import SyncFS

/// The synced ignore files as the reader sees them (doc/SEMANTICS.md, "Ignored paths on a mount"):
/// read before any change goes; within a budget of files and bytes, so a
/// container with thousands of them, or large ones, costs no more than the budget, and what is
/// below the files beyond it waits rather than being uploaded by guess.
@Suite("Synced ignore files: read before anything goes, within a budget")
struct IgnoreFilesBudgetTests {
    static let settings = MountIgnores.Settings(defaults: false, synced: true, local: nil)

    /// A file system with the synced ignore files `files` (folder path to text), read once.
    func readAll(_ files: [(folder: String, text: String)]) throws -> FileSystemFixture {
        let fixture = try FileSystemFixture()
        fixture.fs.configureIgnores(Self.settings)
        for (folder, text) in files {
            var parent = InodeNumber.root
            for name in folder.split(separator: "/") {
                if let existing = try? fixture.lookupIno(String(name), in: parent) {
                    parent = existing
                } else {
                    parent = try fixture.mkdir(String(name), in: parent)
                }
            }
            try fixture.makeFile(".syncfs-ignore", in: parent, contents: bytes(text))
        }
        IgnoreFilesReader(fileSystem: fixture.fs, reachability: Reachability(), logger: Logger(label: "test")).read()
        return fixture
    }

    /// One file more than the budget: it is not read, its folder's new entries wait, and
    /// `status` shows one rules error (failed before: every file was read, without a bound).
    @Test func theFilesBeyondTheBudgetAreNotRead() throws {
        var files = (0..<IgnoreFilesReader.budgetFiles).map { (folder: "f\(1000 + $0)", text: "*.tmp\n") }
        files.append((folder: "zz/deeper", text: "*.log\n"))
        let fixture = try readAll(files)
        let current = fixture.fs.ignores.current
        #expect(current.synced.count == IgnoreFilesReader.budgetFiles)
        #expect(current.unreadable == ["zz/deeper"])
        #expect(fixture.fs.rulesWatch.errors.map(\.path) == ["zz/deeper/.syncfs-ignore"])
        let deeper = try fixture.lookupIno("deeper", in: try fixture.lookupIno("zz"))
        let new = try #require(fixture.fileID(of: try fixture.makeFile("new.txt", in: deeper)))
        #expect(UploadRecords(fileSystem: fixture.fs).ignoreVerdict(new) == .waiting(folder: "zz/deeper"))
    }

    /// Large files fill the byte budget: the one that does not fit is not read (failed before:
    /// each up to 1 MiB was read, whatever their number).
    @Test func theBytesBeyondTheBudgetAreNotRead() throws {
        let large = "*.tmp\n" + String(repeating: "#", count: 1_000_000) + "\n"
        let files = (0..<9).map { (folder: "d\($0)" + String(repeating: "/s", count: $0), text: large) }
        let fixture = try readAll(files)
        let current = fixture.fs.ignores.current
        #expect(current.synced.count == 8)
        #expect(current.unreadable == ["d8" + String(repeating: "/s", count: 8)])
        #expect(fixture.fs.rulesWatch.errors.count == 1)
    }

    /// At the start (a restart, a first attach) nothing goes before the synced ignore files are
    /// read once, and a touched file is read again before anything goes (failed before: the
    /// uploader decided by the rules of no synced file at all).
    @Test func everyChangeWaitsUntilTheSyncedFilesAreRead() throws {
        let fixture = try FileSystemFixture()
        fixture.fs.configureIgnores(Self.settings)
        let note = try #require(fixture.fileID(of: try fixture.makeFile("note.txt", contents: bytes("n"))))
        let records = UploadRecords(fileSystem: fixture.fs)
        #expect(records.ignoreVerdict(note) == .waiting(folder: ""), "not read yet")
        let reader = IgnoreFilesReader(
            fileSystem: fixture.fs, reachability: Reachability(), logger: Logger(label: "test"))
        reader.read()
        #expect(records.ignoreVerdict(note) == .upload)
        try fixture.makeFile(".syncfs-ignore", contents: bytes("*.txt\n"))
        #expect(records.ignoreVerdict(note) == .waiting(folder: ""), "touched, not read again yet")
        reader.read()
        if case .localOnly = records.ignoreVerdict(note) {} else { Issue.record("note.txt is ignored now") }
    }
}
