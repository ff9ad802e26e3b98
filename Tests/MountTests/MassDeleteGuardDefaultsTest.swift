import Foundation
import Glibc
import TestSupport
import Testing

/// The mass-delete guard with its default thresholds (doc/SEMANTICS.md, "Mass-delete guard"):
/// it trips on what it exists for — removing or encrypting files that have been in the container
/// for a while — and a `discard` brings every one back, also the first few that went before it
/// tripped. Files are made established by a remount of A: what the container had when a mount
/// started is established at once.
@Suite(.serialized)
struct MassDeleteGuardDefaultsTest {
    struct GuardedStatus: Decodable {
        struct Guard: Decodable {
            var held: Bool
            var heldChanges: Int?
        }

        var massDeleteGuard: Guard?
    }

    /// Guarded changes that go at once at a person's pace (`DeleteWindow.Thresholds.standard`):
    /// at most these of a burst reach B before the guard trips.
    static let prompt = 20

    private func isHeld(_ folder: TestFolder) throws -> Bool {
        let status: GuardedStatus = try folder.statusJSON(of: folder.root)
        return status.massDeleteGuard?.held == true
    }

    private func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// `count` text files in `folder`, synced to B, then A remounted: they are established.
    private func makeEstablished(_ mounts: SyncedMounts, _ folder: String, files count: Int) throws -> [String: [UInt8]]
    {
        try makeDirectory(mounts.a.path(folder))
        var contents: [String: [UInt8]] = [:]
        for index in 0..<count {
            let name = "\(folder)/note-\(index).txt"
            let text = bytes("note \(index)\n" + String(repeating: "line of text \(index)\n", count: 1 + index % 7))
            try writeFile(mounts.a.path(name), text)
            contents[name] = text
        }
        #expect(mounts.a.expectSync(timeout: 120))
        #expect(
            waitUntil(timeout: 120) { try contents.allSatisfy { try readFile(mounts.b.path($0.key)) == $0.value } },
            "B has the tree\n\(mounts.logs())")
        try mounts.a.unmount()
        try mounts.a.remount()
        return contents
    }

    private func expectHeld(_ folder: TestFolder, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            waitUntil(timeout: 60) { try isHeld(folder) }, "the guard trips\n\(folder.daemonLog())",
            sourceLocation: sourceLocation)
    }

    /// Fails if more than `allowed` of `contents` changed on B (the first changes of a burst go
    /// at once; the rest is held), polled for `seconds`.
    private func expectBKeepsAllBut(
        _ allowed: Int, of contents: [String: [UInt8]], _ mounts: SyncedMounts, seconds: Double,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var changed = 0
        let leaked = waitUntil(timeout: seconds) {
            changed = contents.filter { (try? readFile(mounts.b.path($0.key))) != $0.value }.count
            return changed > allowed
        }
        #expect(
            !leaked, "B lost \(changed) files, more than \(allowed)\n\(mounts.logs())", sourceLocation: sourceLocation)
    }

    /// Discard on A; then A and B have every file back, byte for byte, and A's queue drains. A
    /// burst still being written when the guard tripped (a loaded machine) leaves changes queued
    /// after the trip: `discard` keeps those as edits made while held, they trip the guard again
    /// when they go, and a second `discard` undoes them (doc/SEMANTICS.md) — at most three rounds.
    private func discardAndExpectEverythingBack(_ mounts: SyncedMounts, _ contents: [String: [UInt8]]) throws {
        for _ in 0..<3 {
            let discard = ModelProcess.run([try TestFolder.binaryPath(), "discard", mounts.a.root], timeout: 300)
            #expect(discard.ok, "\(discard)\n\(mounts.a.daemonLog())")
            var heldAgain = false
            _ = waitUntil(timeout: 120) {
                if try isHeld(mounts.a) {
                    heldAgain = true
                    return true
                }
                return contents.allSatisfy { (try? readFile(mounts.a.path($0.key))) == $0.value }
            }
            if !heldAgain { break }
        }
        for folder in [mounts.a, mounts.b] {
            var wrong: [String] = []
            let back = waitUntil(timeout: 120) {
                wrong = contents.filter { (try? readFile(folder.path($0.key))) != $0.value }.map(\.key)
                return wrong.isEmpty
            }
            #expect(back, "\(folder.root) has every file back: \(wrong.prefix(5)) differ\n\(mounts.logs())")
        }
        #expect(try !isHeld(mounts.a))
        #expect(mounts.a.expectSync(timeout: 120))
    }

    @Test func removingAThirdOfAnEstablishedTreeTripsAndDiscardBringsAllBack() throws {
        try SyncedMounts.with { mounts in
            let contents = try makeEstablished(mounts, "notes", files: 240)
            // 100 of 240 (and the others stay): over 30 % of the tree.
            let doomed = contents.keys.sorted().prefix(100)
            for name in doomed { try posix("unlink") { unlink(mounts.a.path(name)) } }
            expectHeld(mounts.a)
            expectBKeepsAllBut(Self.prompt, of: contents, mounts, seconds: 5)
            try discardAndExpectEverythingBack(mounts, contents)
        }
    }

    /// A's changes wait 2 s after their last write: the whole burst is queued before its first
    /// rewrite goes, however slowly a loaded machine writes it, so every rewrite comes before the
    /// trip and `discard` undoes them all (rewrites are counted as they go; a program still
    /// writing after the trip makes edits held, which `discard` keeps: doc/SEMANTICS.md).
    @Test func rewritingEstablishedFilesWithRandomBytesTripsAndDiscardRestoresThem() throws {
        try SyncedMounts.with(uploadDelay: 2000, uploadDelayB: 20) { mounts in
            let contents = try makeEstablished(mounts, "docs", files: 110)
            for name in contents.keys.sorted() {
                try writeFile(mounts.a.path(name), (0..<4096).map { _ in UInt8.random(in: 0...255) })
            }
            expectHeld(mounts.a)
            expectBKeepsAllBut(Self.prompt, of: contents, mounts, seconds: 5)
            try discardAndExpectEverythingBack(mounts, contents)
        }
    }

    @Test func rmRFOfAThousandEstablishedFilesTripsInALargerTree() throws {
        try SyncedMounts.with { mounts in
            // 1,000 files of 4,000: 25 %, under the fraction; the count trips.
            var contents: [String: [UInt8]] = [:]
            for part in 0..<4 {
                try makeDirectory(mounts.a.path("part\(part)"))
                for index in 0..<1000 {
                    let name = "part\(part)/f\(index)"
                    contents[name] = bytes("\(part)-\(index)\n")
                    try writeFile(mounts.a.path(name), contents[name]!)
                }
            }
            #expect(mounts.a.expectSync(timeout: 300))
            #expect(waitUntil(timeout: 120) { exists(mounts.b.path("part3/f999")) }, "B has the tree\n\(mounts.logs())")
            try mounts.a.unmount()
            try mounts.a.remount()
            let rm = ModelProcess.run(["/bin/rm", "-rf", mounts.a.path("part0")], timeout: 120)
            #expect(rm.ok, "\(rm)")
            expectHeld(mounts.a)
            let part0 = contents.filter { $0.key.hasPrefix("part0/") }
            expectBKeepsAllBut(Self.prompt, of: part0, mounts, seconds: 5)
            let release = ModelProcess.run([try TestFolder.binaryPath(), "release", mounts.a.root], timeout: 60)
            #expect(release.ok, "\(release)")
            #expect(
                waitUntil(timeout: 120) { !exists(mounts.b.path("part0")) },
                "released: B loses the folder\n\(mounts.logs())")
            #expect(exists(mounts.b.path("part1/f0")))
        }
    }
}
