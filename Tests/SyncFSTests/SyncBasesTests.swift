import SQLiteSupport
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// The sync bases live in the state database; memory keeps only the changes not yet committed
/// and a bounded cache of reads (`SyncBases`).
@Suite("SyncBases: the database holds them, memory only what is not committed")
struct SyncBasesTests {
    /// A store whose flusher does not commit while the test looks (`slowBatchDelay`).
    struct Fixture {
        let directory: TemporaryDirectory
        let store: MetadataStore
        let bases: SyncBases

        init() throws {
            directory = try TemporaryDirectory()
            store = try MetadataStore(path: directory.path + "/state.db", batchDelay: slowBatchDelay)
            bases = SyncBases(store: store)
        }

        /// What a transaction does: changes the base, records it, hands the batch over.
        func change(_ id: FileID, to base: SyncBase?) {
            bases.set(id, base)
            bases.handed(store.record([base.map { .syncBaseSet(id, $0) } ?? .syncBaseRemove(id)]))
        }

        /// What a fresh mount would read: the committed row only.
        func committed(_ id: FileID) throws -> SyncBase? { try store.syncBase(of: id) }

        func close() {
            try? store.close()
            directory.remove()
        }
    }

    static func base(_ version: EntryVersion) -> SyncBase {
        SyncBase(
            version: version,
            manifest: [
                ChunkRef(hash: ChunkHash(bytes: [UInt8](repeating: UInt8(version % 251), count: 32))!, length: 2)
            ])
    }

    @Test func aChangedBaseStaysInMemoryUntilItsBatchIsCommitted() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let id = FileID.random()
        fixture.change(id, to: Self.base(3))
        fixture.bases.settle()
        #expect(try fixture.committed(id) == nil, "not committed yet: only memory has it")
        #expect(fixture.bases[id] == Self.base(3))
        #expect(fixture.bases.uncommittedCount == 1)

        try fixture.store.commit(durable: false)
        fixture.bases.settle()
        #expect(fixture.bases.uncommittedCount == 0, "committed: memory lets it go")
        #expect(fixture.bases[id] == Self.base(3))
        #expect(try fixture.committed(id) == Self.base(3))
        #expect(SyncBases(store: fixture.store)[id] == Self.base(3), "read back from the database")
    }

    @Test func aLaterChangeOfTheSameBaseWaitsForItsOwnBatch() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let id = FileID.random()
        fixture.change(id, to: Self.base(1))
        try fixture.store.commit(durable: false)
        // Version 2 is handed over after version 1's batch was committed, and before it settled.
        fixture.change(id, to: Self.base(2))
        fixture.bases.settle()
        #expect(fixture.bases.uncommittedCount == 1, "version 2 is not in the database: memory keeps it")
        #expect(fixture.bases[id] == Self.base(2), "the committed version 1 must not hide version 2")
        #expect(try fixture.committed(id) == Self.base(1))

        fixture.change(id, to: nil)
        fixture.bases.settle()
        #expect(fixture.bases[id] == nil, "a removal not yet committed is a removal")
        try fixture.store.commit(durable: false)
        fixture.bases.settle()
        #expect(fixture.bases.uncommittedCount == 0)
        #expect(fixture.bases[id] == nil)
        #expect(try fixture.committed(id) == nil)
    }

    /// A real failure: another connection holds the write lock, so the commit fails with
    /// SQLITE_BUSY after the busy timeout (5 s).
    @Test(.timeLimit(.minutes(1)))
    func aFailedCommitKeepsTheChangesInMemory() async throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let id = FileID.random()
        let blocker = try SQLiteConnection(path: fixture.directory.path + "/state.db")
        try blocker.execute("BEGIN IMMEDIATE")
        fixture.change(id, to: Self.base(7))
        let store = fixture.store
        let failed = await waiting { (try? store.commit(durable: false)) == nil }
        #expect(failed, "the commit must fail while another connection writes")
        fixture.bases.settle()
        #expect(fixture.bases.uncommittedCount == 1, "not committed: memory keeps it")
        #expect(fixture.bases[id] == Self.base(7))
        try blocker.execute("ROLLBACK")
        try fixture.store.commit(durable: false)
        fixture.bases.settle()
        #expect(fixture.bases.uncommittedCount == 0)
        #expect(try fixture.committed(id) == Self.base(7))
    }

    @Test func theCountFollowsEveryChange() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let (first, second) = (FileID.random(), FileID.random())
        fixture.change(first, to: Self.base(1))
        fixture.change(second, to: Self.base(1))
        fixture.change(first, to: Self.base(2))
        #expect(fixture.bases.count == 2)
        try fixture.store.commit(durable: false)
        fixture.bases.settle()
        fixture.change(second, to: nil)
        fixture.change(FileID.random(), to: nil)
        #expect(fixture.bases.count == 1, "removing a base that is not there counts nothing")
        try fixture.store.commit(durable: false)
        var committed = 0
        try fixture.store.forEachSyncBase { _, _ in committed += 1 }
        #expect(committed == 1)
    }

    @Test func memoryStaysBoundedWhateverTheNumberOfBases() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let ids = (0..<(3 * SyncBases.cacheGeneration)).map { _ in FileID.random() }
        for (index, id) in ids.enumerated() { fixture.change(id, to: Self.base(EntryVersion(index + 1))) }
        #expect(fixture.bases.uncommittedCount == ids.count)
        try fixture.store.commit(durable: false)
        fixture.bases.settle()
        #expect(fixture.bases.uncommittedCount == 0)
        #expect(fixture.bases.cachedCount <= 2 * SyncBases.cacheGeneration)
        for index in [0, 1, ids.count / 2, ids.count - 1] {
            #expect(fixture.bases[ids[index]] == Self.base(EntryVersion(index + 1)))
        }
        #expect(fixture.bases.count == ids.count)
        #expect(fixture.bases.versions(where: { _ in true }).count == ids.count)
    }

    @Test func anIDTheMountsPassDidNotNoteIsAnsweredWithoutTheDatabase() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        let (noted, unnoted) = (FileID.random(), FileID.random())
        fixture.change(noted, to: Self.base(1))
        fixture.change(unnoted, to: Self.base(2))
        try fixture.store.commit(durable: false)
        let remounted = SyncBases(store: fixture.store)
        #expect(remounted[unnoted] == Self.base(2), "before the pass is done, every miss reads the database")
        let fresh = SyncBases(store: fixture.store)
        fresh.noteCommitted(noted)
        fresh.loaded()
        #expect(fresh[noted] == Self.base(1), "noted by the pass: read from the database")
        #expect(fresh[unnoted] == nil, "ruled out by the filter: its row, planted behind the pass, is not read")
    }

    @Test func aBaseSetAfterTheMountIsReadBackOnceTheCacheForgotIt() throws {
        let fixture = try Fixture()
        defer { fixture.close() }
        fixture.bases.loaded()
        let id = FileID.random()
        fixture.change(id, to: Self.base(5))
        try fixture.store.commit(durable: false)
        fixture.bases.settle()
        #expect(fixture.bases.uncommittedCount == 0)
        for _ in 0..<(3 * SyncBases.cacheGeneration) { fixture.bases.minted(FileID.random()) }
        #expect(fixture.bases.cachedCount <= 2 * SyncBases.cacheGeneration)
        #expect(fixture.bases[id] == Self.base(5), "the filter holds every ID given a base: it is read again")
    }

    @Test func aRemountCountsAndReadsTheCommittedBases() throws {
        let fixture = try FileSystemFixture()
        let ids = (0..<3).map { _ in FileID.random() }
        fixture.fs.live.transact { tree in
            for (index, id) in ids.enumerated() { tree.setBase(id, Self.base(EntryVersion(index + 1))) }
            tree.removeBase(ids[1])
        }
        #expect(fixture.fs.live.transact { $0.bases.count } == 2)
        try fixture.reopen()
        #expect(fixture.fs.live.transact { $0.bases.count } == 2, "the mount counts the committed rows")
        #expect(fixture.fs.live.transact { $0.bases.uncommittedCount } == 0)
        #expect(fixture.fs.live.transact { $0.bases[ids[0]] } == Self.base(1))
        #expect(fixture.fs.live.transact { $0.bases[ids[1]] } == nil)
        #expect(fixture.fs.live.transact { $0.bases[ids[2]] } == Self.base(3))
    }

    /// The mount reads every committed base once: a row it cannot read refuses the mount with
    /// SQLite's or the codec's words, before anything can ask for that base while mounted.
    @Test func aDamagedBaseRowRefusesTheMount() throws {
        let fixture = try FileSystemFixture()
        let id = FileID.random()
        fixture.fs.live.transact { tree in tree.setBase(id, Self.base(4)) }
        #expect(throws: MetadataError.self) {
            try fixture.reopen {
                let connection = try SQLiteConnection(path: fixture.databasePath)
                let statement = try connection.statement("UPDATE sync_base SET manifest = ? WHERE file_id = ?")
                statement.bind(1, bytes: [1, 2, 3])
                statement.bind(2, id.hex)
                try statement.run()
            }
        }
    }
}
