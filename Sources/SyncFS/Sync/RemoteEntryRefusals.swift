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
/// the same entry clears its refusal (`clear`).
final class RemoteEntryRefusals: Sendable {
    private let entries = Mutex<[FileID: RefusedRemoteEntry]>([:])

    init() {}

    /// Records a refusal; true if this file ID was not refused before (the caller logs it once).
    @discardableResult
    func record(_ id: FileID, version: EntryVersion, reason: String) -> Bool {
        entries.withLock { entries in
            let isNew = entries[id] == nil
            entries[id] = RefusedRemoteEntry(fileID: id.hex, version: version, reason: reason)
            return isNew
        }
    }

    /// Records the refusal of `entry` and logs it the first time its file ID is refused.
    func refuse(_ entry: RemoteEntry, because reason: String, logger: Logger) {
        guard record(entry.id, version: entry.version, reason: reason) else { return }
        logger.warning("refused remote entry \(entry.id) (version \(entry.version)): \(reason)")
    }

    /// Forgets the refusal of `id` (a valid version of it arrived).
    func clear(_ id: FileID) {
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    /// Every refusal, ordered by file ID.
    var all: [RefusedRemoteEntry] {
        entries.withLock { Array($0.values) }.sorted { $0.fileID < $1.fileID }
    }
}
