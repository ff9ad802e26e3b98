/// One version of an entry as a container's history keeps it (doc/SEMANTICS.md "Version
/// history and the trash").
public struct HistoricVersion: Equatable, Sendable, Codable {
    /// The entry at that version (a tombstone for a deletion: its state is the last live state).
    public var entry: RemoteEntry
    /// When the container committed it: nanoseconds since the Unix epoch, by the container's
    /// clock; 0 when unknown (versions committed before the container kept history).
    public var committedAt: Int64
    /// When a later version replaced it, same clock; nil while it is the entry's current version.
    public var replacedAt: Int64?

    public init(entry: RemoteEntry, committedAt: Int64, replacedAt: Int64?) {
        self.entry = entry
        self.committedAt = committedAt
        self.replacedAt = replacedAt
    }
}

/// The history of a container: every version it still keeps (those inside its retention,
/// `RetentionPolicy`; garbage collection drops the others) and its deleted entries (the trash).
/// Read-only: restoring is an ordinary commit (`CommitRequest`) of an old state, never a rewrite
/// of history. Containers that keep history conform beside `Container`; wrappers forward it.
///
/// Contracts every implementation keeps (`Tests/SyncBackendTests/ContainerHistoryConformanceTests.swift`):
/// - Every commit keeps the version it replaces, with the time it was replaced, until garbage
///   collection prunes it; the current version (or tombstone) is always listed.
/// - `history(of:limit:)` lists an entry's versions newest first, the current one first, at most
///   `limit`; empty for an entry that never existed. A version whose content was purged is not listed.
/// - `deletedEntries(before:limit:)` lists current tombstones whose content is still kept,
///   newest deletion first, only those with a version below `before` (nil: from the newest), at
///   most `limit`; `replacedAt` is nil for them (a tombstone is the current version).
/// - `limit` must be within `HistoryPage.limits` (else `invalidRequest`).
public protocol ContainerHistory: Sendable {
    func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion]
    func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion]
}

/// The page sizes the history calls accept.
public enum HistoryPage {
    public static let limits = 1...1000

    /// `limit` if acceptable, else `invalidRequest`.
    public static func size(_ limit: Int) throws(ContainerProtocolError) -> Int {
        guard limits.contains(limit) else {
            throw .invalidRequest(
                "a history page holds \(limits.lowerBound)...\(limits.upperBound) versions, not \(limit)")
        }
        return limit
    }
}
