import SyncBackend

/// The numbers of a `scan-end` or `synced` event (doc/SEMANTICS.md, "Sync rounds"); absent
/// fields do not apply to the kind.
struct EventCounts: Codable, Sendable, Equatable {
    /// `scan-end`: entries read from the container's feed during the scan.
    var entries: Int?
    /// `scan-end`: entries new to this mount, changed (a newer version of one it had) and
    /// removed (a deletion of one it had), as the feed said.
    var added: Int?
    var changed: Int?
    var removed: Int?
    /// `synced`: this mount's changes the container committed since the last `synced`.
    var sent: Int?
    /// `synced`: other devices' changes applied here since the last `synced`.
    var received: Int?
    /// `synced`: content bytes uploaded and downloaded since the last `synced` (downloads
    /// include placeholders read or pinned meanwhile).
    var bytesUploaded: Int64?
    var bytesDownloaded: Int64?
}

/// What a `conflict` event tells an app or a notifier so it can ask the user
/// (doc/SEMANTICS.md, "Conflicts and merges"): the copy, and both versions with their base.
struct ConflictDetails: Codable, Sendable, Equatable {
    /// The conflict copy, relative to the mount point; for a file merged with conflict markers,
    /// the file itself.
    var copy: String
    var copyFileID: String
    /// The device name that kept the copy (this mount's: the event is published where it is made).
    var host: String
    var reason: String
    /// True for a file merged with conflict markers (no copy: both versions are in the file).
    var markers: Bool?
    /// This mount's version (where it is now: the copy, or the merged file).
    var local: ConflictVersion?
    /// The container's version (where it is now: the file at `path`).
    var remote: ConflictVersion?
    /// The version both started from (its number only), when known.
    var base: ConflictVersion?
}

/// One version in a conflict: what is known of it here.
struct ConflictVersion: Codable, Sendable, Equatable {
    /// The file that holds it now, relative to the mount point.
    var path: String?
    var fileID: String?
    /// The container's version number (absent for local content not committed yet).
    var version: UInt64?
    var size: Int64?
    /// ISO 8601, UTC, milliseconds (as `time`).
    var mtime: String?
    /// The device ID that committed it (a remote version).
    var device: String?

    init(
        path: String? = nil, fileID: FileID? = nil, version: UInt64? = nil, size: Int64? = nil, mtime: Int64? = nil,
        device: String? = nil
    ) {
        self.path = path
        self.fileID = fileID?.hex
        self.version = version
        self.size = size
        // (A time before 1970 is left out: `time`'s format has no negative years.)
        self.mtime = mtime.flatMap { $0 >= 0 ? ChangeEvent.timestamp(nanoseconds: $0) : nil }
        self.device = device
    }
}
