/// One kept version of an entry, for `syncfs-mount versions`.
public struct VersionListing: Codable, Sendable, Equatable {
    public var version: UInt64
    /// When the container committed it, nanoseconds since the epoch (0: unknown, older than history).
    public var committedAt: Int64
    /// When a later version replaced it; nil for the current version.
    var replacedAt: Int64?
    public var kind: String
    public var size: Int64
    /// The device (state directory) that made it.
    public var device: String
    /// That device's name, when this mount knows it (its own versions); nil for another device.
    public var deviceName: String? = nil
    /// What this version changed against the one before it (`VersionChange`).
    public var change: String
    public var current: Bool
}

/// `versions PATH`: the entry and its kept versions, newest first.
public struct HistoryListing: Codable, Sendable, Equatable {
    public var path: String
    public var fileID: String
    public var versions: [VersionListing]
}

/// One item of `syncfs-mount trash`: a deleted entry with what was deleted together with it.
public struct TrashListing: Codable, Sendable, Equatable {
    public var fileID: String
    /// The path it had; nil when a folder above it is gone for good.
    public var path: String?
    public var name: String
    public var kind: String
    /// The deletion's version and time (nanoseconds since the epoch; 0: unknown).
    public var version: UInt64
    public var deletedAt: Int64
    public var device: String
    /// That device's name, when this mount knows it (its own deletions); nil for another device.
    public var deviceName: String? = nil
    /// Entries restored with it (itself included) and the sizes of their files added up.
    public var entries: Int
    public var bytes: Int64
}

/// What `restore` did: the paths brought back (as new changes, synced like any other) and those
/// it could not bring back, with why.
public struct RestoreReport: Codable, Sendable, Equatable {
    public struct Skipped: Codable, Sendable, Equatable {
        public var path: String
        public var reason: String
    }

    public var restored: [String] = []
    public var skipped: [Skipped] = []
    /// The folder shows the restored entries already (the follower applied them); false when the
    /// command stopped waiting first (they appear once it catches up).
    public var applied = false
}
