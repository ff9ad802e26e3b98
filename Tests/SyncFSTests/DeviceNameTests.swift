import Foundation
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// Device names (doc/SEMANTICS.md, "Device names"): what `--device-name` accepts, the default,
/// and names from elsewhere (a conflict note another machine wrote) made harmless where used.
@Suite struct DeviceNameTests {
    @Test func validNamesAreAcceptedAndHostileOnesRefused() {
        for good in ["laptop", "vm-3f2a", "Büro PC", "研究室", String(repeating: "x", count: 64)] {
            #expect(DeviceName(validating: good)?.text == good, "\(good)")
        }
        let bad = [
            "", ".", "..", "a/b", "/", "line\nbreak", "tab\there", "\u{1b}[31mred", "bell\u{07}", " leading",
            "trailing ", "bidi\u{202e}txt", "zero\u{200b}width", String(repeating: "x", count: 65),
            String(repeating: "é", count: 33),
        ]
        for name in bad {
            #expect(DeviceName(validating: name) == nil, "\(name.debugDescription)")
            #expect(DeviceName.problem(name) != nil, "\(name.debugDescription)")
        }
    }

    @Test func theDefaultIsTheHostNameAndAStableSuffix() {
        let id = "3f2a9c0d11223344"
        #expect(DeviceName.standard(hostName: "vm", deviceID: id).text == "vm-3f2a")
        #expect(DeviceName.standard(hostName: "vm", deviceID: id) == DeviceName.standard(hostName: "vm", deviceID: id))
        #expect(
            DeviceName.standard(hostName: "vm", deviceID: "beef") != DeviceName.standard(hostName: "vm", deviceID: id))
        // A host name that is not a valid name still gives one.
        for host in ["", "a/b", "\u{1b}]0;x\u{07}", String(repeating: "h", count: 300), ".."] {
            let name = DeviceName.standard(hostName: host, deviceID: id)
            #expect(
                DeviceName(validating: name.text) == name, "\(host.debugDescription) -> \(name.text.debugDescription)")
            #expect(name.text.hasSuffix("-3f2a"))
        }
    }

    @Test func remoteNamesAreSanitisedWhereUsed() {
        let hostile = "\u{1b}]0;pwned\u{07}evil/../../etc\npasswd\u{202e}"
        let shown = DeviceName.sanitised(hostile)
        #expect(
            !shown.contains("/") && !shown.contains("\n") && !shown.contains("\u{1b}") && !shown.contains("\u{202e}"))
        #expect(DeviceName.sanitised(String(repeating: "é", count: 100)).utf8.count <= DeviceName.maxLength)
        #expect(DeviceName.sanitised("..") == "unknown" && DeviceName.sanitised("") == "unknown")
        // In a conflict copy's name: one name, no path, within NAME_MAX.
        let directory = Node(
            record: EntryRecord(
                ino: .root, fileID: .root, parent: nil, name: FileName(bytes: []), kind: .directory, mode: 0o755,
                uid: 0, gid: 0, size: 0, atime: 0, mtime: 0, ctime: 0, symlinkTarget: nil), xattrs: [:])
        let name = ConflictNames.free(
            for: FileName(bytes: Array("report.txt".utf8)), in: directory,
            host: hostile + String(repeating: "/", count: 300),
            time: 0)
        #expect(!name.bytes.contains(UInt8(ascii: "/")) && !name.bytes.contains(10) && !name.bytes.contains(0x1b))
        #expect(name.bytes.count <= FileName.maxLength)
    }

    /// A hostile container sends a conflict copy whose note (synced xattr) names a "device" made
    /// of terminal escapes, a path and a line break: `conflicts` shows it harmless.
    @Test func aHostileConflictNoteIsShownHarmless() async throws {
        let fixture = try HostileFixture()
        let original = try await fixture.commitGoodFile("notes.txt", Array("mine\n".utf8))
        let note = ConflictNote(
            of: original.hex, host: "\u{1b}]0;pwned\u{07}evil/../../x\nnext", time: "\u{1b}[2J2026",
            reason: "because\u{1b}[31m\nsecond line")
        let copy = FileID.random()
        let content = Array("theirs\n".utf8)
        let chunk = content.withUnsafeBytes { ChunkCodec.encode($0) }
        try await fixture.container.putChunk(chunk)
        let outcome = try await fixture.container.commit(
            CommitRequest(
                id: copy, baseVersion: 0,
                change: .put(
                    EntryState(
                        parent: .root, name: Array("notes (conflict).txt".utf8), kind: .file, mode: 0o644, mtime: 1,
                        size: Int64(content.count),
                        xattrs: ["user.syncfs.conflict": Array(try JSONEncoder().encode(note))],
                        manifest: [ChunkRef(hash: chunk.hash, length: Int64(content.count))])),
                device: "good"))
        guard case .committed = outcome else { throw HostileTestFailure("commit: \(outcome)") }
        try await eventually("the conflict is listed") {
            fixture.folder.fs.conflictsView.unresolved().count == 1
        }
        let listed = try #require(fixture.folder.fs.conflictsView.unresolved().first)
        for text in [listed.host, listed.time, listed.reason] {
            #expect(
                !text.contains("\u{1b}") && !text.contains("\n") && !text.contains("\u{07}"), "\(text.debugDescription)"
            )
        }
        #expect(!listed.host.contains("/"), "\(listed.host)")
    }
}
