import Crypto

/// A digest of a container's live tree at one feed position: SHA-256 over the (ID, version) pair
/// of every live entry but the root, sorted by ID, each pair as 16 bytes of ID and 8 bytes of
/// version (big-endian). Whoever applied the same changes up to the same cursor computes the
/// same digest; an entry added, hidden, or at another version changes it. It says nothing about
/// states or content: versions name them (`Container.treeDigest`, doc/PROTOCOL.md "The tree
/// digest").
public struct TreeDigest: Codable, Equatable, Sendable {
    /// 64 lowercase hex digits.
    public var digest: String
    /// How many live entries it covers (the root not counted).
    public var entries: Int
    /// The feed position it stands for: the cursor a client holds once it has read the change
    /// feed to its end and applied it (`FeedCursor.beginning` for a container without commits).
    public var cursor: FeedCursor

    public init(digest: String, entries: Int, cursor: FeedCursor) {
        self.digest = digest
        self.entries = entries
        self.cursor = cursor
    }

    /// The digest of the live entries `versions` (the root is left out; one pair per ID).
    public init(versions: some Sequence<(FileID, EntryVersion)>, cursor: FeedCursor) {
        var pairs = versions.filter { $0.0 != .root }
        pairs.sort { ($0.0.high, $0.0.low) < ($1.0.high, $1.0.low) }
        var hasher = SHA256()
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        for (id, version) in pairs {
            bytes.removeAll(keepingCapacity: true)
            for value in [id.high, id.low, version] {
                withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
            }
            hasher.update(data: bytes)
        }
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        for byte in hasher.finalize() { hex += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        self.init(digest: String(decoding: hex, as: UTF8.self), entries: pairs.count, cursor: cursor)
    }

    /// Whether `digest` is 64 lowercase hex digits and the count is not negative.
    public var isWellFormed: Bool {
        entries >= 0 && digest.utf8.count == 64
            && digest.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// The digest of `container` computed from its change feed, read once from the beginning to
    /// its end (pages of `FeedPosition.largestPage`): a consistent snapshot at the last cursor,
    /// since every change up to it was read and a later version of an entry replaces an earlier
    /// one. Costs one pass over the feed and memory for one (ID, version) pair per entry.
    public static func fromFeed(of container: some Container) async throws(ContainerProtocolError) -> TreeDigest {
        var live: [FileID: EntryVersion] = [:]
        var cursor = FeedCursor.beginning
        while true {
            let batch = try await container.changes(after: cursor, limit: 10_000)
            for entry in batch.entries {
                live[entry.id] = entry.isDeleted ? nil : entry.version
            }
            cursor = batch.cursor
            guard batch.moreComing, !batch.entries.isEmpty else { break }
        }
        return TreeDigest(versions: live.lazy.map { ($0.key, $0.value) }, cursor: cursor)
    }
}

extension Container {
    /// The default `treeDigest`: computed from the change feed (`TreeDigest.fromFeed`).
    public func treeDigest() async throws(ContainerProtocolError) -> TreeDigest {
        try await TreeDigest.fromFeed(of: self)
    }
}

/// A container that reaches one of several servers and may move between them
/// (`FailoverContainer`): `observeSwitches` registers a call made (outside any lock, from the
/// task whose call was answered) each time calls go to another server than before, also for
/// the first answer. The mount checks its tree against the new server then (`SyncEngine`'s tree
/// check): a server it left may have lied about the feed.
public protocol ServerSwitching: Sendable {
    func observeSwitches(_ observer: @escaping @Sendable () -> Void)
}
