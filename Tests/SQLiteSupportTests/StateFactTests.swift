import Foundation
import SQLiteSupport
import SyncBackend
import Testing

@testable import SyncFS

/// The typed facts write exactly the text the string-keyed code wrote before them (so a state
/// directory moves between releases either way), and read it back as the same values.
@Suite("StateFact: typed facts, released text")
struct StateFactTests {
    @Test func eachFactWritesItsReleasedTextAndReadsItBack() throws {
        let database = try ScratchDatabase()
        let store = try MetadataStore(path: database.path)
        let ids: Set<FileID> = [
            FileID(hex: "00000000000000000000000000000002")!, FileID(hex: "ff000000000000000000000000000001")!,
        ]
        let name = try #require(DeviceName(validating: "laptop ☕"))
        let when = Date(timeIntervalSince1970: 1_732_473_600.25)
        store.factSet(.containerID, "5f0c7a64-1b2c-4d3e-8f90-a1b2c3d4e5f6")
        store.factSet(.container, "/data/box")
        store.factSet(.mountpoint, "/home/me/SyncFS")
        store.factSet(.tokenFile, nil)
        store.factSet(.caFile, "/etc/ca.pem")
        store.factSet(.deviceID, "0123456789abcdef0123456789abcdef")
        store.factSet(.deviceName, name)
        store.factSet(.mountCount, 12)
        store.factSet(.nextIno, 4242)
        store.factSet(.feedCursor, FeedCursor(token: "17"))
        store.factSet(.deferredIDs, ids)
        store.record([.fact(.lastSync, when)])
        let state = try store.load()
        try store.close()

        #expect(
            state.meta == [
                "container_id": "5f0c7a64-1b2c-4d3e-8f90-a1b2c3d4e5f6", "container": "/data/box",
                "mountpoint": "/home/me/SyncFS", "token_file": "", "ca_file": "/etc/ca.pem",
                "device_id": "0123456789abcdef0123456789abcdef", "device_name": "laptop ☕", "mount_count": "12",
                "next_ino": "4242", "feed_cursor": "17",
                "deferred_ids": "00000000000000000000000000000002,ff000000000000000000000000000001",
                "last_sync": "\(1_732_473_600.25)",
            ])
        let facts = state.facts
        #expect(facts[.container] == "/data/box")
        #expect(facts[.tokenFile] == nil, "a cleared fact reads as absent")
        #expect(facts[.deviceName] == name)
        #expect(facts[.mountCount] == 12)
        #expect(facts[.nextIno] == 4242)
        #expect(facts[.feedCursor] == FeedCursor(token: "17"))
        #expect(facts[.deferredIDs] == ids)
        #expect(facts[.lastSync] == when)
    }

    @Test func unreadableTextReadsAsAbsent() {
        let facts = StateFacts(["mount_count": "many", "device_name": "a/b", "next_ino": "", "deferred_ids": "zz,"])
        #expect(facts[.mountCount] == nil)
        #expect(facts[.deviceName] == nil, "an invalid device name is replaced by the default, not used")
        #expect(facts[.nextIno] == nil)
        #expect(facts[.deferredIDs] == [], "unreadable IDs are skipped, as before")
        #expect(facts[.feedCursor] == nil)
    }
}
