import Dispatch
import Foundation
import Glibc
import SQLiteSupport
import SyncBackend
import Synchronization

/// The one owner of the state database (SQLite, WAL mode).
///
/// The folder records its metadata changes here as `MetadataChange` values: every tree
/// transaction hands its changes to `record` as one batch and its cache-file removals to
/// `afterCommit` (`TreeTransaction`); state facts are set with `factSet`; the mount-time repair
/// of the loaded tree also uses `entryCreated` and `entryChanged`. (`entriesChanged`,
/// `entryRemoved`, `xattrSet` and `xattrRemoved` are one-change shorthands only tests use.)
/// Changes are *written behind*: they are queued in order and committed in batches by a flusher
/// thread, one SQLite transaction per batch, a few milliseconds after the change — so `create` of
/// 10,000 files costs a handful of commits, not 10,000.
///
/// Invariants:
/// - Changes are committed in exactly the order they were recorded, and a batch is committed
///   whole or not at all; so after a crash the database shows the folder as it was at some
///   instant (no orphan rows, no half-applied rename).
/// - `commit(durable: true)` returns only once every change recorded before the call is on disk
///   (the WAL is fsync'd). This is what `fsync`/`fsyncdir` wait for.
/// - Actions registered with `afterCommit` (removing a deleted file's cache file) run only after
///   the changes recorded before them are committed, so a crash never leaves an entry whose
///   content was already removed.
final class MetadataStore: Sendable {
    private struct Pending {
        var changes: [MetadataChange] = []
        var afterCommit: [@Sendable () -> Void] = []
        var hasUnsyncedCommits = false
        var closed = false
        /// How many batches were recorded (`record`'s ticket of the newest).
        var recorded: UInt64 = 0
        /// Callers of `waitForQueue(below:)` waiting for a commit to take the queue.
        var queueWaiters = 0
    }

    private let connection: LockedConnection
    /// A second connection to the same file, for reads under the namespace lock (`SyncBases`):
    /// in WAL mode it never waits for the flusher's commits and checkpoints, which hold
    /// `connection`; it sees every transaction committed before its read begins. An in-memory
    /// database is read through `connection` itself.
    private let reader: LockedConnection
    private let pending = Mutex(Pending())
    private let wakeFlusher: DispatchSemaphore
    /// Signalled once per waiter of `waitForQueue(below:)` when a commit takes the queue.
    private let queueTaken = DispatchSemaphore(value: 0)
    /// Commits recorded changes in the background (`runFlusher`) until `close()`.
    private let flusher: Worker
    private let batchDelay: Duration
    /// The latest commit error, reported by `commit` and logged by the owner.
    private let lastError = Mutex<MetadataError?>(nil)
    /// How many transactions were written to the database (an idle mount writes none).
    let transactionsWritten = Atomic<Int>(0)
    /// The ticket of the newest batch committed (`record`): every batch whose ticket is at most
    /// this is in the database, readable by any read that starts after this was loaded.
    let committedThrough = Atomic<UInt64>(0)
    /// Room kept for this database on a full disk; nil for none (in-memory stores).
    let reserve: SpaceReserve?

    /// Opens (creating and migrating as needed) the database at `path`, or a private in-memory
    /// database for `":memory:"`. `batchDelay` is how long the flusher waits to gather a batch.
    /// `reserve`: room kept for the database on a full disk (`SpaceReserve`), released when
    /// opening or a commit fails for want of space (then retried once); nil for none.
    init(path: String, batchDelay: Duration = .milliseconds(5), reserve: SpaceReserve? = nil) throws {
        let connection: SQLiteConnection
        do {
            connection = try Self.open(path)
        } catch {
            // On a full disk SQLite cannot make its WAL index (`-shm`) nor write the WAL. Any other
            // failure (a damaged database above all) keeps the reserve and is reported as it is.
            guard let reserve, Self.mayBeForWantOfSpace(error, reserve: reserve), reserve.release() else {
                throw error
            }
            connection = try Self.open(path)
        }
        let writer = LockedConnection(connection)
        self.connection = writer
        reader = path == ":memory:" ? writer : LockedConnection(try SQLiteConnection(path: path, create: false))
        self.batchDelay = batchDelay
        self.reserve = reserve
        let wakeFlusher = DispatchSemaphore(value: 0)
        self.wakeFlusher = wakeFlusher
        flusher = Worker("syncfs-metadata", wake: { wakeFlusher.signal() })
        flusher.start { [self] worker in runFlusher(worker) }
    }

    /// Whether opening may have failed for want of space: SQLite said the disk is full, or it
    /// failed otherwise (an I/O error making the `-shm`) on a disk with less than the reserve's
    /// margin free. Never for a damaged database.
    private static func mayBeForWantOfSpace(_ error: any Error, reserve: SpaceReserve) -> Bool {
        guard let error = error as? MetadataError, !error.isDamage else { return false }
        return error.isDiskFull || (reserve.freeBytes() ?? 0) < SpaceReserve.margin
    }

    /// SQLite's words if `error` says the database file is damaged (`SQLiteError.isDamage`), else nil.
    static func damage(in error: any Error) -> String? {
        guard let error = error as? MetadataError, error.isDamage else { return nil }
        return error.message
    }

    private static func open(_ path: String) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path)
        if path != ":memory:" {
            try connection.execute("PRAGMA journal_mode = WAL")
            try connection.execute("PRAGMA journal_size_limit = \(walSizeLimitBytes)")
        }
        try connection.execute("PRAGMA synchronous = NORMAL")
        try StateDatabaseSchema.migrations.migrate(connection)
        return connection
    }

    // MARK: Recording changes (queued, committed behind)

    func entryCreated(_ record: EntryRecord) { enqueue(.upsert(record)) }
    func entryChanged(_ record: EntryRecord) { enqueue(.upsert(record)) }
    /// Several entries changed together (a rename exchange): committed in the same batch.
    func entriesChanged(_ records: [EntryRecord]) { enqueue(records.map { .upsert($0) }) }
    func entryRemoved(_ ino: InodeNumber) { enqueue(.delete(ino)) }
    func xattrSet(_ ino: InodeNumber, name: String, value: [UInt8]) {
        enqueue(.setXattr(ino, name: name, value: value))
    }
    func xattrRemoved(_ ino: InodeNumber, name: String) { enqueue(.removeXattr(ino, name: name)) }
    /// Records `fact` (nil clears it).
    func factSet<Value>(_ fact: StateFact<Value>, _ value: Value?) { enqueue(.fact(fact, value)) }

    /// Several changes that must be committed together (an entry change and its outbox row, a
    /// remote change applied with its new sync base and feed cursor): always in one batch.
    /// Returns the batch's ticket: it is committed once `committedThrough` reaches it.
    @discardableResult
    func record(_ changes: [MetadataChange]) -> UInt64 { enqueue(changes) }

    /// Runs `action` once every change recorded so far is committed.
    func afterCommit(_ action: @escaping @Sendable () -> Void) {
        pending.withLock { $0.afterCommit.append(action) }
        wakeFlusher.signal()
    }

    /// How many recorded changes wait for the flusher.
    var queuedChanges: Int { pending.withLock { $0.changes.count } }

    /// Blocks while more than `limit` recorded changes wait for the flusher: a producer faster
    /// than the flusher (`AttachTracker.followerHandled`) keeps the queue bounded and leaves the
    /// writing to the flusher, which commits what gathered meanwhile as one batch. A producer that
    /// committed by itself instead took turns with the flusher on the one writing connection (a
    /// first attach of 1,000,000 entries: 59 s against 41 s; doc/PERFORMANCE.md). If no commit
    /// takes the queue within `patience` (a commit failing, the disk full), the caller commits
    /// once itself and returns, as before: a failed commit keeps its changes queued, and the
    /// caller is never held longer than that. Returns at once on a closed store.
    func waitForQueue(below limit: Int, patience: DispatchTimeInterval = .seconds(1)) {
        while true {
            let mustWait = pending.withLock { state in
                guard state.changes.count > limit, !state.closed else { return false }
                state.queueWaiters += 1
                return true
            }
            guard mustWait else { return }
            wakeFlusher.signal()
            guard queueTaken.wait(timeout: .now() + patience) == .timedOut else { continue }
            let counted = pending.withLock { state in
                // A commit may have counted this waiter out just as the wait timed out: its
                // signal is then on its way, and is taken here, not left for a later wait.
                guard state.queueWaiters > 0 else { return true }
                state.queueWaiters -= 1
                return false
            }
            if counted { queueTaken.wait() }
            try? commit(durable: false)
            return
        }
    }

    private func enqueue(_ change: MetadataChange) { enqueue([change]) }

    @discardableResult
    private func enqueue(_ changes: [MetadataChange]) -> UInt64 {
        let (wasEmpty, ticket) = pending.withLock { state in
            let wasEmpty = state.changes.isEmpty
            state.changes.append(contentsOf: changes)
            state.recorded += 1
            return (wasEmpty, state.recorded)
        }
        if wasEmpty { wakeFlusher.signal() }
        return ticket
    }

    // MARK: Committing

    /// Commits every change recorded so far now. With `durable`, also makes it (and every earlier
    /// commit) survive a power loss before returning.
    func commit(durable: Bool) throws {
        try connection.withLock { connection in
            let (changes, actions, needsSync, through, waiters) = pending.withLock { state in
                defer {
                    state.changes = []
                    state.afterCommit = []
                    state.queueWaiters = 0
                }
                return (
                    state.changes, state.afterCommit, state.hasUnsyncedCommits, state.recorded, state.queueWaiters
                )
            }
            for _ in 0..<waiters { queueTaken.signal() }
            if changes.isEmpty && !(durable && needsSync) {
                for action in actions { action() }
                return
            }
            if durable { try connection.execute("PRAGMA synchronous = FULL") }
            defer { if durable { try? connection.execute("PRAGMA synchronous = NORMAL") } }
            let coalesced = Self.inWriteOrder(Self.coalesced(changes))
            func write(_ connection: SQLiteConnection) throws {
                try connection.transaction {
                    for change in coalesced { try apply(change, on: connection) }
                    if changes.isEmpty {
                        // Nothing new, but earlier commits are not yet synced: a tiny write makes
                        // SQLite sync the WAL, which carries them all.
                        try apply(.fact(.lastSync, Date()), on: connection)
                    }
                }
            }
            do {
                do {
                    try write(connection)
                } catch let error as MetadataError where error.isDiskFull {
                    // A full disk: the reserve's room is the database's (`SpaceReserve`).
                    guard reserve?.release() == true else { throw error }
                    try write(connection)
                }
            } catch {
                // Put the batch back in front so nothing recorded is ever dropped.
                pending.withLock { state in
                    state.changes.insert(contentsOf: changes, at: 0)
                    state.afterCommit.insert(contentsOf: actions, at: 0)
                }
                let failure = error as? MetadataError ?? MetadataError(code: 0, message: "\(error)")
                lastError.withLock { $0 = failure }
                throw failure
            }
            transactionsWritten.add(1, ordering: .relaxed)
            committedThrough.store(through, ordering: .releasing)
            reserve?.replenish()
            pending.withLock { $0.hasUnsyncedCommits = !durable }
            for action in actions { action() }
        }
    }

    private func upsert(_ entry: EntryRecord, on connection: SQLiteConnection) throws {
        let statement = try connection.statement(
            """
            INSERT OR REPLACE INTO entries
            (ino, file_id, parent_ino, name, kind, mode, uid, gid, size, atime_ns, mtime_ns, ctime_ns, symlink_target,
             placeholder, pinned)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        statement.bind(1, Int64(bitPattern: entry.ino.rawValue))
        statement.bind(2, entry.fileID.hex)
        if let parent = entry.parent {
            statement.bind(3, Int64(bitPattern: parent.rawValue))
        } else {
            statement.bindNull(3)
        }
        entry.name.withUnsafeBytes { statement.bind(4, bytes: $0) }
        statement.bind(5, entry.kind.rawValue)
        statement.bind(6, Int64(entry.mode))
        statement.bind(7, Int64(entry.uid))
        statement.bind(8, Int64(entry.gid))
        statement.bind(9, entry.size)
        statement.bind(10, entry.atime)
        statement.bind(11, entry.mtime)
        statement.bind(12, entry.ctime)
        statement.bind(13, bytes: entry.symlinkTarget)
        statement.bind(14, entry.isPlaceholder ? 1 : 0)
        statement.bind(15, entry.isPinned ? 1 : 0)
        try statement.run()
    }

    private func apply(_ change: MetadataChange, on connection: SQLiteConnection) throws {
        switch change {
        case .upsert(let entry):
            try upsert(entry, on: connection)
        case .delete(let ino):
            for sql in ["DELETE FROM entries WHERE ino = ?", "DELETE FROM xattrs WHERE ino = ?"] {
                let statement = try connection.statement(sql)
                statement.bind(1, Int64(bitPattern: ino.rawValue))
                try statement.run()
            }
        case .setXattr(let ino, let name, let value):
            let statement = try connection.statement(
                "INSERT OR REPLACE INTO xattrs (ino, name, value) VALUES (?, ?, ?)")
            statement.bind(1, Int64(bitPattern: ino.rawValue))
            statement.bind(2, name)
            statement.bind(3, bytes: value)
            try statement.run()
        case .removeXattr(let ino, let name):
            let statement = try connection.statement("DELETE FROM xattrs WHERE ino = ? AND name = ?")
            statement.bind(1, Int64(bitPattern: ino.rawValue))
            statement.bind(2, name)
            try statement.run()
        case .setMeta(let key, let value):
            let statement = try connection.statement("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)")
            statement.bind(1, key)
            statement.bind(2, value)
            try statement.run()
        case .outboxPut(let item):
            let statement = try connection.statement(
                "INSERT OR REPLACE INTO outbox (file_id, seq, generation, attempts, last_error) VALUES (?, ?, ?, ?, ?)")
            statement.bind(1, item.fileID.hex)
            statement.bind(2, Int64(bitPattern: item.seq))
            statement.bind(3, Int64(bitPattern: item.generation))
            statement.bind(4, Int64(item.attempts))
            if let error = item.lastError { statement.bind(5, error) } else { statement.bindNull(5) }
            try statement.run()
        case .outboxRemove(let id):
            let statement = try connection.statement("DELETE FROM outbox WHERE file_id = ?")
            statement.bind(1, id.hex)
            try statement.run()
        case .syncBaseSet(let id, let base, let state):
            let statement = try connection.statement(
                "INSERT OR REPLACE INTO sync_base (file_id, version, manifest, state) VALUES (?, ?, ?, ?)")
            statement.bind(1, id.hex)
            statement.bind(2, Int64(bitPattern: base.version))
            statement.bind(3, bytes: ManifestEncoding.encode(base.manifest))
            if let state { statement.bind(4, bytes: BaseStateEncoding.encode(state)) } else { statement.bindNull(4) }
            try statement.run()
        case .syncBaseRemove(let id):
            let statement = try connection.statement("DELETE FROM sync_base WHERE file_id = ?")
            statement.bind(1, id.hex)
            try statement.run()
        }
    }

    private func runFlusher(_ worker: Worker) {
        while true {
            wakeFlusher.wait()
            let closed = pending.withLock { $0.closed }
            // Gathers a batch; a stop (`close`, which commits by itself) ends the wait.
            if closed || !worker.sleep(for: batchDelay) { break }
            // A failed background commit keeps its batch queued; the next wake retries it.
            try? commit(durable: false)
        }
    }

    /// Commits everything durably and stops the flusher. The store must not be used afterwards.
    func close() throws {
        defer {
            pending.withLock { $0.closed = true }
            flusher.stop()
            flusher.join()
        }
        try commit(durable: true)
        try connection.withLock { connection in
            connection.resetAll()
            do {
                try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            } catch let error as MetadataError where error.isDiskFull {
                // Copying the log into the database may need room: the reserve's, else the log
                // stays (everything is committed in it, durably; the next open carries on).
                if reserve?.release() == true { try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            }
        }
    }

    /// The most recent commit failure, if any.
    var lastCommitError: MetadataError? { lastError.withLock { $0 } }

    /// SQLite's page cache during a first attach, in KiB (`PRAGMA cache_size` when negative):
    /// 64 MiB instead of SQLite's 2 MiB. Entries and sync bases are keyed by random file IDs, so
    /// applying a whole feed writes all over their B-trees; with 2 MiB almost every insert read
    /// its pages back from the OS, from the disk once the OS's cache was reclaimed (1,000,000
    /// entries: 9.3 million reads, 1 GB from the disk; with 64 MiB: 3.4 million, 62 MB —
    /// doc/performance-log.md, "A container of 1,000,000 entries").
    static let attachCacheKiB = 65_536
    /// SQLite's default page cache (2 MiB), used otherwise: a running mount's RSS stays low.
    static let normalCacheKiB = 2_000
    /// The WAL's size, in 4 KiB pages, from which a commit checkpoints it into the database during
    /// a first attach: 256 MiB instead of SQLite's 4 MiB. The attach writes all over B-trees keyed
    /// by random file IDs; between two checkpoints a page is written to the database once however
    /// often it changed, so fewer checkpoints write (and sync) far fewer pages (1,000,000 entries:
    /// `ready` after 45.6 s instead of 63–68 s; doc/PERFORMANCE.md). The WAL file shrinks back
    /// to `walSizeLimitBytes` after the next checkpoint.
    static let attachCheckpointPages = 65_536
    /// SQLite's default.
    static let normalCheckpointPages = 1_000
    /// What a WAL file is truncated to after a checkpoint (`PRAGMA journal_size_limit`).
    static let walSizeLimitBytes = 64 << 20

    /// Uses the larger page cache and WAL of a first attach (`attachCacheKiB`,
    /// `attachCheckpointPages`) or goes back to the normal ones, giving the memory back (to the
    /// system too: `malloc_trim`). Best effort: a failure only costs speed.
    func useAttachSettings(_ attaching: Bool) {
        connection.withLock { connection in
            try? connection.execute(
                "PRAGMA cache_size = -\(attaching ? Self.attachCacheKiB : Self.normalCacheKiB); "
                    + "PRAGMA wal_autocheckpoint = \(attaching ? Self.attachCheckpointPages : Self.normalCheckpointPages)"
            )
            if !attaching { try? connection.execute("PRAGMA shrink_memory") }
        }
        // The allocator keeps what SQLite freed: hand it back to the system.
        if !attaching { _ = Self.mallocTrim?(0) }
    }

    /// glibc's `malloc_trim`, which the Glibc module does not export (nil elsewhere).
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    // MARK: Reading

    /// The entry state of `id`'s sync base (manifest empty), if it is recorded: what the local
    /// copy and the container last agreed on. Commits pending changes first. Used when a commit
    /// conflicts (rare), so it reads the database rather than keeping states in memory.
    func baseState(of id: FileID) throws -> EntryState? {
        try baseStates(of: [id])[id]
    }

    /// The recorded sync-base states of `ids` (those with none are absent), read in one pass.
    /// Commits pending changes first.
    func baseStates(of ids: [FileID]) throws -> [FileID: EntryState] {
        guard !ids.isEmpty else { return [:] }
        try commit(durable: false)
        return try connection.withLock { connection in
            let row = try connection.statement("SELECT state FROM sync_base WHERE file_id = ?")
            defer { connection.resetAll() }
            var states: [FileID: EntryState] = [:]
            for id in ids {
                row.reset()
                row.bind(1, id.hex)
                if try row.step(), let bytes = row.bytes(0), let state = BaseStateEncoding.decode(bytes) {
                    states[id] = state
                }
            }
            return states
        }
    }

    // MARK: Reading sync bases (`SyncBases` keeps the uncommitted ones)

    /// The committed sync base of `id`, nil if it has none (read on `reader`).
    func syncBase(of id: FileID) throws -> SyncBase? {
        try reader.withLock { connection in
            let row = try connection.statement("SELECT version, manifest FROM sync_base WHERE file_id = ?")
            defer { row.reset() }
            row.bind(1, id.hex)
            guard try row.step() else { return nil }
            return try Self.syncBase(id, version: row.int64(0), manifest: row.bytes(1))
        }
    }

    /// Calls `body` with every committed sync base, in no particular order (at mount).
    func forEachSyncBase(_ body: (FileID, SyncBase) throws -> Void) throws {
        try reader.withLock { connection in
            let rows = try connection.statement("SELECT file_id, version, manifest FROM sync_base")
            defer { rows.reset() }
            while try rows.step() {
                let id = try Self.fileID(rows)
                try body(id, try Self.syncBase(id, version: rows.int64(1), manifest: rows.bytes(2)))
            }
        }
    }

    /// Calls `body` with the version of every committed sync base, in no particular order.
    func forEachSyncBaseVersion(_ body: (FileID, EntryVersion) -> Void) throws {
        try reader.withLock { connection in
            let rows = try connection.statement("SELECT file_id, version FROM sync_base")
            defer { rows.reset() }
            while try rows.step() { body(try Self.fileID(rows), UInt64(bitPattern: rows.int64(1))) }
        }
    }

    private static func fileID(_ rows: SQLiteStatement) throws -> FileID {
        guard let id = rows.withUTF8Text(0, { FileID(hexDigits: $0) }) else {
            throw MetadataError(code: 0, message: "malformed sync_base row \(rows.text(0))")
        }
        return id
    }

    private static func syncBase(_ id: FileID, version: Int64, manifest: [UInt8]?) throws -> SyncBase {
        guard let manifest = ManifestEncoding.decode(manifest ?? []) else {
            throw MetadataError(code: 0, message: "malformed sync_base manifest of \(id)")
        }
        return SyncBase(version: UInt64(bitPattern: version), manifest: manifest)
    }

    // MARK: Reading (once, at mount)

    /// Reads every entry, extended attribute and fact. Commits pending changes first.
    func load() throws -> StoredState {
        try commit(durable: false)
        return try connection.withLock { connection in
            var entries: [EntryRecord] = []
            let rows = try connection.statement(
                """
                SELECT ino, file_id, parent_ino, name, kind, mode, uid, gid, size, atime_ns, mtime_ns, ctime_ns, symlink_target,
                       placeholder, pinned
                FROM entries
                """)
            while try rows.step() {
                guard let fileID = rows.withUTF8Text(1, { FileID(hexDigits: $0) }),
                    let kind = NodeKind(rawValue: rows.int64(4))
                else {
                    throw MetadataError(code: 0, message: "malformed entry row for inode \(rows.int64(0))")
                }
                entries.append(
                    EntryRecord(
                        ino: InodeNumber(UInt64(bitPattern: rows.int64(0))), fileID: fileID,
                        parent: rows.isNull(2) ? nil : InodeNumber(UInt64(bitPattern: rows.int64(2))),
                        name: FileName(bytes: rows.bytes(3) ?? []), kind: kind,
                        mode: UInt32(truncatingIfNeeded: rows.int64(5)),
                        uid: UInt32(truncatingIfNeeded: rows.int64(6)),
                        gid: UInt32(truncatingIfNeeded: rows.int64(7)), size: rows.int64(8),
                        atime: rows.int64(9), mtime: rows.int64(10), ctime: rows.int64(11),
                        symlinkTarget: rows.bytes(12), isPlaceholder: rows.int64(13) != 0,
                        isPinned: rows.int64(14) != 0))
            }
            var xattrs: [InodeNumber: [String: [UInt8]]] = [:]
            let xattrRows = try connection.statement("SELECT ino, name, value FROM xattrs")
            while try xattrRows.step() {
                let ino = InodeNumber(UInt64(bitPattern: xattrRows.int64(0)))
                xattrs[ino, default: [:]][xattrRows.text(1)] = xattrRows.bytes(2) ?? []
            }
            var meta: [String: String] = [:]
            let metaRows = try connection.statement("SELECT key, value FROM meta")
            while try metaRows.step() { meta[metaRows.text(0)] = metaRows.text(1) }
            var outbox: [OutboxItem] = []
            let outboxRows = try connection.statement(
                "SELECT file_id, seq, generation, attempts, last_error FROM outbox ORDER BY seq")
            while try outboxRows.step() {
                guard let id = FileID(hex: outboxRows.text(0)) else {
                    throw MetadataError(code: 0, message: "malformed outbox row \(outboxRows.text(0))")
                }
                outbox.append(
                    OutboxItem(
                        fileID: id, seq: UInt64(bitPattern: outboxRows.int64(1)),
                        generation: UInt64(bitPattern: outboxRows.int64(2)), readyAt: 0,
                        attempts: Int(outboxRows.int64(3)),
                        lastError: outboxRows.isNull(4) ? nil : outboxRows.text(4)))
            }
            connection.resetAll()
            return StoredState(entries: entries, xattrs: xattrs, meta: meta, outbox: outbox)
        }
    }

    /// Removes rows that no longer belong to the tree: entries whose parent is gone (and their
    /// descendants) and xattrs of missing entries. Returns how many entries were removed.
    /// Used at mount as a consistency check; with the ordering invariant it finds nothing.
    func removeOrphans(_ inos: [InodeNumber]) throws {
        guard !inos.isEmpty else { return }
        for ino in inos { entryRemoved(ino) }
        try commit(durable: true)
    }
}
