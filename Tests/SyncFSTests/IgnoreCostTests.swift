import Foundation
import SyncBackend
import SyncMerge
import Testing

@testable import SyncFS

/// What the ignore decision adds to each change the uploader takes (doc/SEMANTICS.md, "Ignored
/// paths on a mount"): one tree lock, the entry's path, one match; the state database only for an
/// ignored path or a delete. Printed for the record, bounded loosely against a blow-up.
@Suite("Ignore decision: its cost per change taken")
struct IgnoreCostTests {
    @Test func theDecisionForASyncedFileIsBoundedAndMostlyTheMatch() throws {
        let fixture = try FileSystemFixture()
        var parent = InodeNumber.root
        for name in ["projects", "syncfs", "Sources"] { parent = try fixture.mkdir(name, in: parent) }
        let file = try fixture.makeFile("Uploader.swift", in: parent, contents: bytes("x"))
        let id = try #require(fixture.fileID(of: file))
        let local = (1...20).map { "*.ext\($0)\nbuild\($0)/" }.joined(separator: "\n")
        fixture.fs.configureIgnores(
            MountIgnores.Settings(defaults: true, synced: true, local: IgnoreFile(parsing: local)))
        let uploads = UploadRecords(fileSystem: fixture.fs)
        #expect(uploads.ignoreVerdict(id) == .upload)
        let rounds = 2_000
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for _ in 0..<rounds { _ = uploads.ignoreVerdict(id) }
        }
        let perChange = elapsed / rounds
        let rules = fixture.fs.ignores.rules
        let matching = clock.measure {
            for _ in 0..<rounds { _ = rules.match("projects/syncfs/Sources/Uploader.swift", isDirectory: false) }
        }
        print("of which the match: \(matching / rounds)")
        #expect(matching <= elapsed * 2)
        print("ignore decision per change (a synced file 4 deep, defaults + 40 local lines): \(perChange)")
        // A debug build: about 1 ms, nearly all of it the match; bounded against a blow-up.
        #expect(perChange < .milliseconds(20))
    }
}
