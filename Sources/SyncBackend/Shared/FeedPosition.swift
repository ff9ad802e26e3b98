/// The change-feed cursor of the containers in this library: the decimal version of the last
/// change the client has seen; the empty token (`FeedCursor.beginning`) is version 0.
///
/// Clients must treat the token as opaque; only the containers read it.
package enum FeedPosition {
    /// The version a cursor stands for. A token that is not one of ours is an `invalidRequest`.
    package static func version(of cursor: FeedCursor) throws(ContainerProtocolError) -> EntryVersion {
        if cursor.token.isEmpty { return 0 }
        guard let version = EntryVersion(cursor.token), String(version) == cursor.token,
            version <= newestPossibleVersion
        else {
            throw .invalidRequest("\"\(cursor.token)\" is not a cursor of this container")
        }
        return version
    }

    /// Versions are SQLite integers: none is beyond 2^63 - 1.
    package static let newestPossibleVersion = EntryVersion(Int64.max)

    /// Refuses a cursor at `version` that the container never gave out: one beyond its newest
    /// version `newest` (doc/PROTOCOL.md: `400`). Such a cursor would otherwise silently skip
    /// every change up to it (a client pointed at an older copy of the container, or a forged
    /// cursor), so it is an error the client must see, never an empty page.
    package static func checkGivenOut(_ version: EntryVersion, newest: EntryVersion) throws(ContainerProtocolError) {
        guard version <= newest else {
            throw .invalidRequest(
                "the cursor \"\(version)\" was never given out by this container (its newest version is \(newest))")
        }
    }

    package static func cursor(at version: EntryVersion) -> FeedCursor { FeedCursor(token: String(version)) }

    /// The batch for rows `fetched` (ordered by version, at most `limit + 1` of them, all after
    /// `cursor`): the first `limit`, the cursor after the last of them, and whether more exist.
    package static func batch(_ fetched: [RemoteEntry], limit: Int, after cursor: FeedCursor) -> ChangeBatch {
        let page = Array(fetched.prefix(limit))
        let next = page.last.map { Self.cursor(at: $0.version) } ?? cursor
        return ChangeBatch(entries: page, cursor: next, moreComing: fetched.count > limit)
    }

    /// The most entries one batch carries, whatever the limit asked ("up to `limit`").
    package static let largestPage = 10_000

    /// The page size for `limit`: positive (else `invalidRequest`), at most `largestPage`.
    package static func pageSize(_ limit: Int) throws(ContainerProtocolError) -> Int {
        guard limit > 0 else { throw .invalidRequest("the change feed limit must be positive, not \(limit)") }
        return min(limit, largestPage)
    }
}
