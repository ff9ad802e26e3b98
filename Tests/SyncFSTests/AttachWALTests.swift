import Foundation
import TestSupport
import Testing

@testable import SyncFS

/// A first attach lets the state database's WAL grow instead of checkpointing every 4 MiB
/// (`MetadataStore.attachCheckpointPages`), and the normal checkpoints come back after it.
@Suite("MetadataStore: the WAL of a first attach")
struct AttachWALTests {
    static func walBytes(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
    }

    /// Commits `count` new entries from `first` on, in batches of 1,000.
    static func commitEntries(_ store: MetadataStore, from first: UInt64, count: UInt64) throws {
        for batch in stride(from: first, to: first + count, by: 1_000) {
            for ino in batch..<batch + 1_000 { store.entryCreated(sampleRecord(ino, name: "entry-\(ino)")) }
            try store.commit(durable: false)
        }
    }

    @Test func theWALGrowsDuringAnAttachAndCheckpointsAfterIt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/state.db"
        let store = try MetadataStore(path: path, batchDelay: slowBatchDelay)
        defer { try? store.close() }
        // Normally a commit checkpoints once the WAL holds 1,000 pages: it stays near 4 MiB.
        try Self.commitEntries(store, from: 10, count: 40_000)
        let normal = Self.walBytes(path)
        #expect(normal < 8 << 20, "\(normal) bytes of WAL")
        store.useAttachSettings(true)
        try Self.commitEntries(store, from: 100_000, count: 40_000)
        let attaching = Self.walBytes(path)
        #expect(attaching > normal + (4 << 20), "\(attaching) bytes of WAL during the attach, \(normal) before")
        // After it, commits checkpoint again: the WAL starts over instead of growing.
        store.useAttachSettings(false)
        try Self.commitEntries(store, from: 200_000, count: 40_000)
        #expect(Self.walBytes(path) <= attaching, "the WAL grew after the attach")
        #expect(committedEntryExists(path, 139_999) && committedEntryExists(path, 239_999))
    }
}
