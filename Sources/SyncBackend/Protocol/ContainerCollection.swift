/// How long a container keeps what is no longer current (doc/SEMANTICS.md "Retention").
///
/// A superseded version is kept while it was replaced less than `days` ago, or while it is one
/// of the entry's `versions` newest superseded versions. A tombstone (with the last state of a
/// deleted entry: the trash) is kept, content and all, while it is less than `days` old. The
/// current version of a live entry is always kept.
public struct RetentionPolicy: Equatable, Sendable, Codable, CustomStringConvertible {
    public static let dayLimits = 0...36_500
    public static let versionLimits = 0...100_000
    public static let nanosecondsPerDay: Int64 = 86_400 * 1_000_000_000

    public var days: Int
    public var versions: Int

    public init(days: Int = 30, versions: Int = 0) {
        self.days = days
        self.versions = versions
    }

    /// Why the policy is unusable, or nil.
    public var problem: String? {
        if !Self.dayLimits.contains(days) { return "retention days must be within \(Self.dayLimits), not \(days)" }
        if !Self.versionLimits.contains(versions) {
            return "retained versions must be within \(Self.versionLimits), not \(versions)"
        }
        return nil
    }

    /// Whether a superseded version replaced at `replacedAt`, the `rank`-th newest superseded
    /// version of its entry (0: the one just before the current), is kept at `now`.
    public func keepsVersion(replacedAt: Int64, rank: Int, now: Int64) -> Bool {
        rank < versions || now - replacedAt < Int64(days) * Self.nanosecondsPerDay
    }

    /// Whether a tombstone committed at `deletedAt` still keeps its content at `now`.
    public func keepsTombstone(deletedAt: Int64, now: Int64) -> Bool {
        now - deletedAt < Int64(days) * Self.nanosecondsPerDay
    }

    public var description: String {
        versions > 0 ? "\(days) days or the last \(versions) versions" : "\(days) days"
    }
}

/// What one garbage collection may do.
public struct CollectionOptions: Sendable, Equatable {
    /// The policy to prune by; nil: the container's own (`CollectableContainer.retention`).
    public var retention: RetentionPolicy?
    /// A chunk stored (or stored again) less than this long ago is never deleted: it may belong
    /// to an upload whose commit has not come yet.
    public var grace: Duration
    /// Count what would go, change nothing.
    public var dryRun: Bool
    /// "Now" in nanoseconds since the epoch (tests); nil: the clock.
    public var now: Int64?

    public init(
        retention: RetentionPolicy? = nil, grace: Duration = .seconds(3600), dryRun: Bool = false, now: Int64? = nil
    ) {
        self.retention = retention
        self.grace = grace
        self.dryRun = dryRun
        self.now = now
    }
}

/// What a garbage collection did (or, dry, would do).
public struct CollectionReport: Equatable, Sendable, Codable {
    /// Superseded versions dropped from the history (past retention).
    public var versionsPruned = 0
    /// Tombstones whose content stopped being kept (they stay in the feed, out of the trash).
    public var tombstonesPurged = 0
    /// Chunks the container held when the collection started.
    public var chunksExamined = 0
    /// Chunks no kept version referenced, deleted.
    public var chunksDeleted = 0
    /// Their stored (encoded) bytes.
    public var bytesFreed: Int64 = 0
    /// Unreferenced chunks kept because they were stored within the grace period.
    public var chunksInGrace = 0
    /// Unreferenced chunks kept because a commit referenced them while the collection ran.
    public var chunksRevived = 0

    public init() {}
}

/// How much a container stores (`syncfs-mount container stats`).
public struct StorageStats: Equatable, Sendable, Codable {
    /// Live entries (files, directories, symlinks; the root included once committed).
    public var liveEntries = 0
    /// Tombstones whose content is kept (the trash), and all tombstones.
    public var trashedEntries = 0
    public var tombstones = 0
    /// Superseded versions the history keeps.
    public var keptVersions = 0
    /// Chunks held, their stored (encoded, compressed) bytes and their plain bytes.
    public var chunks = 0
    public var storedBytes: Int64 = 0
    public var chunkPlainBytes: Int64 = 0
    /// The sizes of the live files added up (what a full download would be).
    public var logicalBytes: Int64 = 0

    public init() {}

    /// Logical bytes per plain chunk byte (> 1: deduplication saves space); nil when empty.
    public var deduplicationRatio: Double? {
        chunkPlainBytes > 0 ? Double(logicalBytes) / Double(chunkPlainBytes) : nil
    }

    /// Plain bytes per stored byte (> 1: compression saves space); nil when empty.
    public var compressionRatio: Double? { storedBytes > 0 ? Double(chunkPlainBytes) / Double(storedBytes) : nil }
}

/// A container an administrator can account for and collect: `syncfs-mount container gc`,
/// `container stats`, `container retention`, and the server's schedule (`serve --gc-every`).
/// Implemented by the stores that own their data (the local container, PostgreSQL + a chunk
/// store), not by clients of a server.
///
/// The collection's contract (doc/SEMANTICS.md "Garbage collection"):
/// - It prunes superseded versions and purges tombstones past retention, then deletes every chunk
///   that no kept version references (live entries, kept tombstones, kept versions), that was
///   not stored again within `grace`, and that no commit referenced while it ran.
/// - It is safe against concurrent commits, uploads and other collections: a commit either
///   comes before a chunk's deletion (and keeps it) or is refused with `chunksMissing` (and
///   the client uploads it again); a chunk a `putChunk` acknowledged within `grace` is kept.
/// - It never deletes a chunk because of a transient failure; a failed collection is run again.
public protocol CollectableContainer: Sendable {
    func retention() async throws(ContainerProtocolError) -> RetentionPolicy
    func setRetention(_ policy: RetentionPolicy) async throws(ContainerProtocolError)
    func collectGarbage(_ options: CollectionOptions) async throws(ContainerProtocolError) -> CollectionReport
    func storageStats() async throws(ContainerProtocolError) -> StorageStats
}
