import SyncBackend

/// Where a record stands in the feed a sealed container shows its engine: the ledger entry that
/// vouched for its current version, and the change's place in that entry. Positions come from the
/// signed ledger alone, so they are the same on every device and across restarts, and a server
/// cannot move, skip or repeat one.
struct FeedSpot: Comparable, Hashable, Sendable {
    var sequence: UInt64
    var index: Int

    static func < (lhs: FeedSpot, rhs: FeedSpot) -> Bool {
        (lhs.sequence, lhs.index) < (rhs.sequence, rhs.index)
    }

    /// Before every record.
    static let beginning = FeedSpot(sequence: 0, index: 0)

    /// The version the engine sees for the record at this spot: `sequence << 20 | index` (a
    /// ledger entry names at most `LedgerEntry.maximumChanges` < 2^20 changes). Versions come from
    /// the signed ledger, never from the container underneath, so a server cannot make the engine
    /// take a later change for an older one (or skip it); they grow in commit order, and the
    /// changes of one commit have consecutive versions.
    var version: EntryVersion { EntryVersion(sequence) << Self.indexBits | EntryVersion(index) }

    static let indexBits: EntryVersion = 20

    /// The first spot whose version is `version` or more.
    init(atLeast version: EntryVersion) {
        self.init(sequence: UInt64(version >> Self.indexBits), index: Int(version & ((1 << Self.indexBits) - 1)))
    }

    /// The engine's cursor after this spot: `s1.SEQUENCE.INDEX` (`beginning` is the empty token).
    var cursor: FeedCursor {
        self == .beginning ? .beginning : FeedCursor(token: "s1.\(sequence).\(index)")
    }

    /// The spot `cursor` stands for; a token that is not one of ours is an `invalidRequest`.
    init(_ cursor: FeedCursor) throws(ContainerProtocolError) {
        if cursor.token.isEmpty {
            self = .beginning
            return
        }
        let parts = cursor.token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "s1", let sequence = UInt64(parts[1]), let index = Int(parts[2]),
            index >= 0, String(sequence) == parts[1], String(index) == parts[2]
        else { throw .invalidRequest("\"\(cursor.token)\" is not a cursor of this sealed container") }
        self.init(sequence: sequence, index: index)
    }

    init(sequence: UInt64, index: Int) {
        self.sequence = sequence
        self.index = index
    }
}

/// The feed a sealed container shows its engine, built from the checked view: every record of
/// the tree at the spot of the ledger change that vouched for its current version, in spot order.
/// An entry changed again moves to its newer spot, so a page holds each entry once, at its newest
/// version, as the `Container` contract asks.
struct SealedFeed {
    /// Each entry's current spot.
    private var spots: [FileID: FeedSpot] = [:]
    /// Spots in order, with entries that have since moved left in place (skipped when read,
    /// dropped when they are most of the list).
    private var order: [(spot: FeedSpot, id: FileID)] = []
    private var stale = 0

    /// The newest spot given out.
    var end: FeedSpot { order.last?.spot ?? .beginning }

    /// Puts `id` at `spot` (a spot later than its current one).
    mutating func move(_ id: FileID, to spot: FeedSpot) {
        if let old = spots[id] {
            guard old < spot else { return }
            stale += 1
        }
        spots[id] = spot
        if let last = order.last, spot < last.spot {
            let place = order.partitioningIndex { !($0.spot < spot) }
            order.insert((spot, id), at: place)
        } else {
            order.append((spot, id))
        }
        if stale > 1024 && stale * 2 > order.count { compact() }
    }

    /// Up to `limit` entries after `after`, in order, and whether more follow.
    func ids(after: FeedSpot, limit: Int) -> (ids: [(FileID, FeedSpot)], moreComing: Bool) {
        var found: [(FileID, FeedSpot)] = []
        var place = order.partitioningIndex { $0.spot > after }
        while place < order.count {
            let (spot, id) = order[place]
            place += 1
            guard spots[id] == spot else { continue }
            if found.count == limit { return (found, true) }
            found.append((id, spot))
        }
        return (found, false)
    }

    private mutating func compact() {
        order.removeAll { spots[$0.id] != $0.spot }
        stale = 0
    }
}

extension Array {
    /// The first index whose element satisfies `belongs`, for a predicate false up to some index
    /// and true from there on (binary search).
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
