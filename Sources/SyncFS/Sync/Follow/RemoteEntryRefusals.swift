import Logging
import SyncBackend
import Synchronization

/// A remote entry this mount refused to apply (its name, kind, mode, size, target or parent
/// failed the checks of `RemoteEntryValidation`), as `status` shows it.
public struct RefusedRemoteEntry: Codable, Sendable, Equatable {
    /// The entry's file ID (hex).
    public var fileID: String
    /// The refused version.
    public var version: EntryVersion
    /// Why, in words ("the name '..' is not a single path component").
    public var reason: String

    public init(fileID: String, version: EntryVersion, reason: String) {
        self.fileID = fileID
        self.version = version
        self.reason = reason
    }
}

/// The remote entries refused since the mount started, newest version per file ID.
///
/// A refused entry changes nothing local; the rest of the feed goes on. A later valid version of
/// the same entry clears its refusal (`clear(ifNewer:)`).
final class RemoteEntryRefusals: Sendable {
    private let entries = Mutex<[FileID: RefusedRemoteEntry]>([:])

    init() {}

    /// Records a refusal; true if this version of the entry was not refused before (the caller
    /// logs it once).
    @discardableResult
    func record(_ id: FileID, version: EntryVersion, reason: String) -> Bool {
        entries.withLock { entries in
            let isNew = entries[id]?.version != version
            entries[id] = RefusedRemoteEntry(fileID: id.hex, version: version, reason: reason)
            return isNew
        }
    }

    /// Records the refusal of `entry` and logs it the first time this version is refused.
    func refuse(_ entry: RemoteEntry, because reason: String, logger: Logger) {
        guard record(entry.id, version: entry.version, reason: reason) else { return }
        logger.warning("refused remote entry \(entry.id) (version \(entry.version)): \(reason)")
    }

    /// Forgets the refusal of `entry`'s file ID if `entry` is a newer version than the refused
    /// one (a valid version arrived). The refused version itself, read again and passing the
    /// container-side checks, keeps its refusal (Core may have refused it, e.g. a kind change).
    func clear(ifNewer entry: RemoteEntry) {
        entries.withLock { entries in
            if let refused = entries[entry.id], refused.version < entry.version { entries[entry.id] = nil }
        }
    }

    /// Whether some version of `id` is refused (and no newer valid one arrived since).
    func isRefused(_ id: FileID) -> Bool { entries.withLock { $0[id] != nil } }

    /// Every refusal, ordered by file ID.
    var all: [RefusedRemoteEntry] {
        entries.withLock { Array($0.values) }.sorted { $0.fileID < $1.fileID }
    }
}
