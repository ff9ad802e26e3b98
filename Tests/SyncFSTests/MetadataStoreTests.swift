import Foundation
import SQLiteSupport
import SyncBackend
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// An entry record with distinct values in every field, so a lost or swapped column shows.
func sampleRecord(
    _ ino: UInt64, parent: InodeNumber? = .root, name: String = "entry", kind: NodeKind = .file,
    size: Int64 = 0, symlinkTarget: [UInt8]? = nil
) -> EntryRecord {
    EntryRecord(
        ino: InodeNumber(ino), fileID: .random(), parent: parent, name: FileName(name), kind: kind,
        mode: 0o640 | UInt32(ino & 0o7), uid: 1000 + UInt32(ino), gid: 2000 + UInt32(ino), size: size,
        atime: 1_700_000_000_000_000_001 + Int64(ino), mtime: 1_700_000_000_000_000_002 + Int64(ino),
        ctime: 1_700_000_000_000_000_003 + Int64(ino), symlinkTarget: symlinkTarget)
}

extension StoredState {
    func entry(_ ino: UInt64) -> EntryRecord? { entries.first { $0.ino == InodeNumber(ino) } }
}

@Suite("MetadataStore: schema, changes, ordering, commits")
struct MetadataStoreTests {
    // MARK: Migrations

    @Test func migrationsSetUserVersionOnANewDatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        let store = try MetadataStore(path: path)
        try store.close()
        let connection = try SQLiteConnection(path: path)
        #expect(try connection.userVersion == StateDatabaseSchema.migrations.latestVersion)
        #expect(StateDatabaseSchema.migrations.latestVersion >= 1)
    }

    @Test func migrationsAreAppliedOnlyOnce() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        let first = try MetadataStore(path: path)
        first.entryCreated(sampleRecord(2, name: "kept"))
        try first.close()
        // Re-running migration 1 would fail (its tables exist) or drop the data.
        let second = try MetadataStore(path: path)
        let state = try second.load()
        try second.close()
        #expect(state.entry(2)?.name == FileName("kept"))
        #expect(try SQLiteConnection(path: path).userVersion == StateDatabaseSchema.migrations.latestVersion)
    }

    @Test func aDatabaseFromANewerBuildIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        try MetadataStore(path: path).close()
        let latest = StateDatabaseSchema.migrations.latestVersion
        try SQLiteConnection(path: path).execute("PRAGMA user_version = \(latest + 1)")
        #expect(throws: SQLiteSchemaTooNew(found: latest + 1, supported: latest)) { try MetadataStore(path: path) }
    }

    @Test func reopeningAFileDatabaseKeepsEverything() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        let record = sampleRecord(5, name: "file", size: 42)
        let first = try MetadataStore(path: path)
        first.entryCreated(record)
        first.xattrSet(record.ino, name: "user.k", value: [1, 2, 3])
        first.factSet(.container, "/some/where")
        try first.close()

        let second = try MetadataStore(path: path)
        let state = try second.load()
        try second.close()
        #expect(state.entries == [record])
        #expect(state.xattrs[record.ino] == ["user.k": [1, 2, 3]])
        #expect(state.meta["container"] == "/some/where")
    }

    // MARK: Round trips

    @Test func entryCreatedRoundTrips() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        let file = sampleRecord(2, name: "f", size: 1 << 40)
        let directory = sampleRecord(3, name: "d", kind: .directory)
        let link = sampleRecord(4, parent: directory.ino, name: "l", kind: .symlink, symlinkTarget: bytes("../f"))
        let emptyTarget = sampleRecord(6, name: "e", kind: .symlink, symlinkTarget: [])
        let rawName = EntryRecord(
            ino: InodeNumber(7), fileID: .random(), parent: .root, name: FileName(bytes: [0xff, 0xfe, 0x41]),
            kind: .file, mode: 0o7777, uid: UInt32.max, gid: 0, size: 0, atime: -1, mtime: 0, ctime: Int64.max,
            symlinkTarget: nil)
        let root = sampleRecord(1, parent: nil, name: "", kind: .directory)
        for record in [file, directory, link, emptyTarget, rawName, root] { store.entryCreated(record) }
        try store.commit(durable: true)
        let state = try store.load()
        #expect(state.entries.count == 6)
        for record in [file, directory, link, emptyTarget, rawName, root] {
            #expect(state.entry(record.ino.rawValue) == record)
        }
        #expect(state.entry(6)?.symlinkTarget == [], "an empty blob stays empty, not NULL")
        #expect(state.entry(2)?.symlinkTarget == nil)
        #expect(state.entry(1)?.parent == nil)
    }

    @Test func entryChangedReplacesTheRecord() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        var record = sampleRecord(2, name: "before", size: 1)
        store.entryCreated(record)
        try store.commit(durable: false)
        record.name = FileName("after")
        record.parent = InodeNumber(9)
        record.size = 99
        record.mode = 0o600
        record.mtime += 5
        store.entryChanged(record)
        try store.commit(durable: true)
        let state = try store.load()
        #expect(state.entries == [record])
    }

    @Test func entriesChangedCommitsAllRecords() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        var first = sampleRecord(2, name: "a")
        var second = sampleRecord(3, name: "b")
        store.entryCreated(first)
        store.entryCreated(second)
        (first.name, second.name) = (second.name, first.name)
        store.entriesChanged([first, second])
        try store.commit(durable: false)
        let state = try store.load()
        #expect(state.entry(2) == first)
        #expect(state.entry(3) == second)
    }

    @Test func entryRemovedDeletesTheEntryAndItsXattrs() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        store.entryCreated(sampleRecord(2, name: "gone"))
        store.entryCreated(sampleRecord(3, name: "stays"))
        store.xattrSet(InodeNumber(2), name: "user.a", value: [1])
        store.xattrSet(InodeNumber(3), name: "user.b", value: [2])
        try store.commit(durable: false)
        store.entryRemoved(InodeNumber(2))
        try store.commit(durable: true)
        let state = try store.load()
        #expect(state.entries.map(\.ino) == [InodeNumber(3)])
        #expect(state.xattrs[InodeNumber(2)] == nil)
        #expect(state.xattrs[InodeNumber(3)] == ["user.b": [2]])
    }

    @Test func xattrSetAndRemovedRoundTrip() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        let ino = InodeNumber(2)
        let big = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        store.entryCreated(sampleRecord(2))
        store.xattrSet(ino, name: "user.empty", value: [])
        store.xattrSet(ino, name: "user.big", value: big)
        store.xattrSet(ino, name: "user.replaced", value: [1])
        store.xattrSet(ino, name: "user.replaced", value: [2, 2])
        store.xattrSet(ino, name: "user.removed", value: [3])
        try store.commit(durable: true)
        #expect(try store.load().xattrs[ino]?.count == 4)
        store.xattrRemoved(ino, name: "user.removed")
        store.xattrRemoved(ino, name: "user.never-set")
        try store.commit(durable: true)
        let xattrs = try store.load().xattrs[ino]
        #expect(xattrs == ["user.empty": [], "user.big": big, "user.replaced": [2, 2]])
    }

    @Test func factSetRoundTripsAndReplaces() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        store.factSet(.mountCount, 1)
        store.factSet(.container, "/a")
        store.factSet(.mountCount, 2)
        try store.commit(durable: true)
        let meta = try store.load().meta
        #expect(meta["mount_count"] == "2")
        #expect(meta["container"] == "/a")
    }

    @Test func commitMakesChangesVisibleToAnotherConnection() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.db"
        // The flusher waits `slowBatchDelay` before its own commit, so the reader sees this commit's.
        let store = try MetadataStore(path: path, batchDelay: slowBatchDelay)
        defer { try? store.close() }
        store.entryCreated(sampleRecord(2, name: "seen"))
        store.factSet(.container, "v")
        try store.commit(durable: true)
        // Not `load()` (which commits itself): a second store on the same file reads what is on disk.
        let reader = try MetadataStore(path: path)
        defer { try? reader.close() }
        let state = try reader.load()
        #expect(state.entry(2)?.name == FileName("seen"))
        #expect(state.meta["container"] == "v")
    }

    // MARK: Ordering within a batch

    @Test func createThenDeleteInOneBatchLeavesNothing() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        store.entryCreated(sampleRecord(2))
        store.xattrSet(InodeNumber(2), name: "user.x", value: [1])
        store.entryChanged(sampleRecord(2, size: 10))
        store.entryRemoved(InodeNumber(2))
        try store.commit(durable: false)
        let state = try store.load()
        #expect(state.entries.isEmpty)
        #expect(state.xattrs.isEmpty)
    }

    @Test func deleteThenRecreateOfTheSameInoKeepsTheNewEntry() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        let old = sampleRecord(2, name: "old")
        store.entryCreated(old)
        store.xattrSet(old.ino, name: "user.old", value: [1])
        try store.commit(durable: false)
        let new = sampleRecord(2, name: "new", kind: .directory)
        store.entryRemoved(old.ino)
        store.entryCreated(new)
        store.xattrSet(new.ino, name: "user.new", value: [2])
        try store.commit(durable: false)
        let state = try store.load()
        #expect(state.entries == [new])
        #expect(state.xattrs[new.ino] == ["user.new": [2]])
    }

    @Test func deleteAndRecreateInOneBatchKeepsTheNewEntry() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        let old = sampleRecord(2, name: "old")
        let new = sampleRecord(2, name: "new")
        store.entryCreated(old)
        store.entryRemoved(old.ino)
        store.entryCreated(new)
        try store.commit(durable: true)
        #expect(try store.load().entries == [new])
    }

    @Test func laterChangesWinInRecordingOrder() throws {
        let store = try MetadataStore(path: ":memory:")
        defer { try? store.close() }
        for size in 1...50 { store.entryChanged(sampleRecord(2, size: Int64(size))) }
        try store.commit(durable: false)
        #expect(try store.load().entry(2)?.size == 50)
    }
}

@Suite("SyncBase: the stored manifest form")
struct SyncBaseEncodingTests {
    /// A hostile container once sent a chunk length of -10, and encoding it trapped the daemon
    /// (validation now refuses such manifests; the encoding no longer traps on any length).
    @Test func everyLengthRoundTripsWithoutTrapping() throws {
        let hash = try #require(ChunkHash(bytes: Array(repeating: 9, count: 32)))
        let manifest = [-10, 0, 1, Int64.max, Int64.min].map { ChunkRef(hash: hash, length: $0) }
        #expect(ManifestEncoding.decode(ManifestEncoding.encode(manifest)) == manifest)
    }
}

@Suite("MetadataStore: coalescing a batch")
struct MetadataStoreCoalescingTests {
    private func record(_ ino: UInt64, name: String, size: Int64 = 0) -> EntryRecord {
        EntryRecord(
            ino: InodeNumber(ino), fileID: .random(), parent: .root, name: FileName(name), kind: .file, mode: 0o644,
            uid: 0, gid: 0, size: size, atime: 0, mtime: 0, ctime: 0, symlinkTarget: nil)
    }

    @Test func laterUpsertsSupersedeEarlierOnesAndDeletesStay() throws {
        let changes: [MetadataChange] = [
            .upsert(record(5, name: "a", size: 1)), .upsert(record(6, name: "b")),
            .upsert(record(5, name: "a", size: 2)),
            .delete(InodeNumber(6)), .fact(.nextIno, 7), .fact(.nextIno, 8),
        ]
        let result = MetadataStore.coalesced(changes)
        #expect(result.count == 3)
        guard case .upsert(let kept) = result[0] else {
            Issue.record("expected the last upsert of inode 5 first, got \(result[0])")
            return
        }
        #expect(kept.size == 2)
        guard case .delete(let deleted) = result[1], case .setMeta(_, let value) = result[2] else {
            Issue.record("expected the delete and the last fact, got \(result)")
            return
        }
        #expect(deleted == InodeNumber(6))
        #expect(value == "8")
    }

    @Test func syncBasesAreWrittenLastInKeyOrderAndNothingElseMoves() {
        let ids = (0..<20).map { _ in FileID.random() }
        var changes: [MetadataChange] = []
        for (index, id) in ids.enumerated() {
            changes.append(.upsert(record(UInt64(index + 2), name: "f\(index)")))
            changes.append(
                index % 3 == 0
                    ? .syncBaseRemove(id)
                    : .syncBaseSet(id, SyncBase(version: EntryVersion(index + 1), manifest: []), state: nil))
        }
        let ordered = MetadataStore.inWriteOrder(changes)
        #expect(ordered.count == changes.count)
        let upserts = ordered.prefix(20).compactMap { change -> InodeNumber? in
            if case .upsert(let entry) = change { return entry.ino }
            return nil
        }
        #expect(upserts == (0..<20).map { InodeNumber(UInt64($0 + 2)) }, "the other changes keep their order")
        let baseIDs = ordered.dropFirst(20).compactMap { change -> FileID? in
            switch change {
            case .syncBaseSet(let id, _, _), .syncBaseRemove(let id): return id
            default: return nil
            }
        }
        #expect(baseIDs == ids.sorted { $0.hex < $1.hex }, "the sync bases last, in the order of their keys")
    }

    @Test func coalescedBatchLeavesTheSameStoredState() throws {
        let store = try MetadataStore(path: ":memory:")
        var entry = record(9, name: "x")
        store.entryCreated(entry)
        for size in 1...50 {
            entry.size = Int64(size)
            store.entryChanged(entry)
        }
        try store.commit(durable: false)
        let stored = try store.load().entries.first { $0.ino == InodeNumber(9) }
        #expect(stored?.size == 50)
    }
}
