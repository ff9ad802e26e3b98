import SyncBackend

/// The temporary name an entry is committed under while local renames swap or rotate names
/// (`.syncfs-moving-<file ID>`, doc/SEMANTICS.md "Uploads"): it frees the name another queued
/// change needs, and the entry is renamed to its real name right after. Never a user's name: an
/// entry this device left under it with nothing of its own queued gets its real name back
/// (`ParkedEntries.unparkIfAbandoned`).
enum ParkingName {
    private static let prefix = Array(".syncfs-moving-".utf8)

    /// The parking name of `id`.
    static func of(_ id: FileID) -> [UInt8] { prefix + Array(id.hex.utf8) }

    /// Whether `entry` is live under its own parking name (cheap for any other name: the follower
    /// asks for every entry it applies).
    static func isParked(_ entry: RemoteEntry) -> Bool {
        !entry.isDeleted && entry.state.name.starts(with: prefix) && entry.state.name == of(entry.id)
    }
}
