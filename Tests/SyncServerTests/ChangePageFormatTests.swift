import Foundation
import SyncBackend
import Testing

@testable import SyncServer

/// The binary form of a change page (`ChangePageFormat`): every field reads back as the JSON form
/// reads it, and a page a hostile server wrote (cut short anywhere, counts that lie, unknown flags,
/// kinds or versions, bytes after the end, a repeated attribute, text that is not UTF-8) is
/// refused with what is wrong, never a crash or an allocation larger than the page.
@Suite struct ChangePageFormatTests {
    /// Entries that use every field and its edges.
    static var varied: ChangeBatch {
        let chunk = Sample.chunk(Sample.bytes(300))
        var file = Sample.file("f.txt", parent: .random(), chunks: [chunk, chunk])
        file.mtime = .min
        file.size = .max
        file.xattrs = ["user.a": [], "user.é": Array(repeating: 0xff, count: 70_000)]
        var link = Sample.file("link", parent: .random())
        link.kind = .symlink
        link.symlinkTarget = Array("../some/where".utf8)
        link.manifest = []
        link.mode = 0o7777
        let root = EntryState(parent: nil, name: [], kind: .directory, mode: 0o755, mtime: -1, size: 0)
        // Not UTF-8, a decomposed é, a control character: names are bytes.
        let odd = [[0xff, 0xfe, 0x41], Array("e\u{301}".utf8), [0x01, 0x7f], Array(repeating: 0x61, count: 255)]
        var entries = [
            RemoteEntry(id: .root, version: 1, isDeleted: false, device: "", state: root),
            RemoteEntry(id: .random(), version: .max, isDeleted: false, device: "dévice-1", state: file),
            RemoteEntry(id: .random(), version: 7, isDeleted: true, device: "d", state: link),
        ]
        for name in odd {
            entries.append(
                RemoteEntry(
                    id: .random(), version: 3, isDeleted: false, device: "d",
                    state: Sample.directory("x", parent: .random()).with(name: name)))
        }
        return ChangeBatch(entries: entries, cursor: FeedCursor(token: "v=12;ü"), moreComing: true)
    }

    @Test func everyFieldReadsBackAsTheJSONFormReadsIt() throws {
        for batch in [
            Self.varied, ChangeBatch(entries: [], cursor: .beginning, moreComing: false),
        ] {
            let bytes = try ChangePageFormat.encode(batch)
            #expect(try ChangePageFormat.decode(bytes) == batch)
            let json = try JSONDecoder().decode(ChangeBatch.self, from: JSONEncoder().encode(batch))
            #expect(try ChangePageFormat.decode(bytes) == json)
            #expect(
                bytes.count == ChangePageFormat.envelopeBytes(batch)
                    + batch.entries.reduce(0) { $0 + ChangePageFormat.encodedBytes(of: $1) })
        }
    }

    @Test func aPageCutShortAnywhereIsRefused() throws {
        let bytes = try ChangePageFormat.encode(Self.varied)
        // Every cut but inside the large attribute value (each of those fails the same way).
        for length in 0..<bytes.count where length < 400 || length > bytes.count - 2_000 || length % 997 == 0 {
            #expect(throws: ChangePageFormat.Failure.self, "cut at \(length)") {
                _ = try ChangePageFormat.decode(Array(bytes[..<length]))
            }
        }
    }

    /// The page of one entry, with its fields as a hostile server may write them.
    static func page(
        magic: [UInt8] = Array("SFCP".utf8), version: UInt8 = 1, moreComing: UInt8 = 0, count: UInt32 = 1,
        flags: UInt8 = 2, device: [UInt8] = Array("d".utf8), kind: UInt8 = 1, xattrs: [[UInt8]] = [],
        chunkCount: UInt32 = 0, trailing: [UInt8] = []
    ) -> [UInt8] {
        func be<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
            (0..<T.bitWidth / 8).map { UInt8(truncatingIfNeeded: value >> (T.bitWidth - 8 - 8 * $0)) }
        }
        var bytes = magic + [version, moreComing] + be(UInt32(1)) + [0x41] + be(count)
        bytes += [UInt8](repeating: 1, count: 16) + be(UInt64(5)) + [flags] + be(UInt16(device.count)) + device
        if flags & 2 != 0 { bytes += [UInt8](repeating: 2, count: 16) }
        bytes += be(UInt16(1)) + [0x62] + [kind] + be(UInt32(0o644)) + be(UInt64(1)) + be(UInt64(0))
        bytes += be(UInt32(xattrs.count))
        for name in xattrs { bytes += be(UInt16(name.count)) + name + be(UInt32(1)) + [9] }
        return bytes + be(chunkCount) + trailing
    }

    @Test func aHostileServersPagesAreRefusedWithWhatIsWrong() throws {
        let good = try ChangePageFormat.decode(Self.page(xattrs: [Array("user.a".utf8)]))
        #expect(good.entries.first?.state.name == [0x62])
        #expect(good.entries.first?.state.xattrs == ["user.a": [9]])
        let cases: [(String, [UInt8])] = [
            ("magic", Self.page(magic: Array("JSON".utf8))),
            ("version 2", Self.page(version: 2)),
            ("moreComing", Self.page(moreComing: 2)),
            ("number of entries", Self.page(count: .max)),
            ("number of entries", Self.page(count: 2)),
            ("unknown flags", Self.page(flags: 2 | 8)),
            ("not UTF-8", Self.page(device: [0xc3])),
            ("unknown kind", Self.page(kind: 4)),
            ("unknown kind", Self.page(kind: 0)),
            ("twice", Self.page(xattrs: [Array("user.a".utf8), Array("user.a".utf8)])),
            ("number of chunks", Self.page(chunkCount: .max)),
            ("after the last entry", Self.page(trailing: [0])),
        ]
        for (expected, bytes) in cases {
            do {
                _ = try ChangePageFormat.decode(bytes)
                Issue.record("accepted a page with a bad \(expected)")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
    }

    @Test func acceptNamesTheBinaryFormOnlyWhenItAsksForIt() {
        let type = ChangePageFormat.mediaType
        for accepted in [type, "application/json, \(type)", "\(type.uppercased());q=0.9", " \(type) ; q=1"] {
            #expect(ChangePageFormat.isAccepted(by: accepted), "\(accepted)")
        }
        for refused in ["", "*/*", "application/json", "\(type);q=0", "\(type); q=0.000", "\(type)x"] {
            #expect(!ChangePageFormat.isAccepted(by: refused), "\(refused)")
        }
    }

    @Test func aBinaryPageOverTheByteBoundHoldsFewerEntries() throws {
        let batch = Self.varied
        let sizes = batch.entries.map(ChangePageFormat.encodedBytes(of:))
        let bound = ChangePageFormat.envelopeBytes(batch) + sizes[0] + sizes[1] + sizes[2]
        guard case .tooLarge(let fitting) = ChangePage.encodeBinary(batch, maxBytes: bound) else {
            Issue.record("a page over its bound was sent whole")
            return
        }
        #expect(fitting == 3)
        let one = ChangeBatch(entries: [batch.entries[1]], cursor: batch.cursor, moreComing: true)
        guard case .fits(let body) = ChangePage.encodeBinary(one, maxBytes: 10) else {
            Issue.record("a single entry was not sent")
            return
        }
        #expect(try ChangePageFormat.decode(Array(body)) == one)
    }
}

extension EntryState {
    fileprivate func with(name: [UInt8]) -> EntryState {
        var copy = self
        copy.name = name
        return copy
    }
}
