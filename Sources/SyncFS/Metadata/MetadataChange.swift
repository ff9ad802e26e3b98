import SQLiteSupport
import SyncBackend

/// Everything the store holds, read once at mount.
struct StoredState: Sendable {
    var entries: [EntryRecord]
    /// Extended attributes by inode, name → value.
    var xattrs: [InodeNumber: [String: [UInt8]]]
    /// Key/value facts (`container`, `next_ino`, `mount_count`, …).
    var meta: [String: String]
    /// Entries with local changes the container has not committed yet.
    var outbox: [OutboxItem] = []
}

/// One change to the stored state, in the order the folder made it.
enum MetadataChange: Sendable {
    case upsert(EntryRecord)
    case delete(InodeNumber)
    case setXattr(InodeNumber, name: String, value: [UInt8])
    case removeXattr(InodeNumber, name: String)
    case setMeta(key: String, value: String)
    /// Inserts or replaces the entry's outbox row.
    case outboxPut(OutboxItem)
    case outboxRemove(FileID)
    /// The base and, when known, the entry state of that version (kept in the database only:
    /// read back by `MetadataStore.baseState` when a commit conflicts).
    case syncBaseSet(FileID, SyncBase, state: EntryState? = nil)
    case syncBaseRemove(FileID)
}

/// A failure of the state database.
typealias MetadataError = SQLiteError
