import Foundation
import SyncBackend
import Synchronization

/// The engine's reads: entries and the change feed, answered from the checked view alone.
extension SealedContainer {
    // MARK: - Entries and the feed

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await catchUp()
        return state.withLock { $0.tree.entry(id) }
    }

    /// A page of the wrapper's own feed (`SealedFeed`): the records the ledger vouches for, each
    /// at its newest version, in the order the ledger vouched for them; ledger entries and
    /// keyrings are never shown. Its cursors name ledger positions, never the container's, so a
    /// server can neither skip a change nor show one twice. A cursor beyond the newest ledger
    /// entry was never given out: `invalidRequest`.
    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        let limit = try FeedPosition.pageSize(limit)
        let after = try FeedSpot(cursor)
        // The read a wait just made is recent enough: what came since follows the answer. A commit
        // of this device is checked by a read of its own.
        let fresh = state.withLock { state -> Bool in
            defer { state.caughtUpForWait = false }
            return state.caughtUpForWait && state.ownCommit == nil
        }
        if fresh { try checkAlarm() } else { try await catchUp() }
        return try state.withLock { (state: inout State) throws(ContainerProtocolError) -> ChangeBatch in
            try Self.checkGivenOut(after, state: state)
            let (ids, moreComing) = state.feed.ids(after: after, limit: limit)
            let entries = ids.compactMap { state.tree.entries[$0.0] }
            return ChangeBatch(entries: entries, cursor: ids.last?.1.cursor ?? cursor, moreComing: moreComing)
        }
    }

    /// True as soon as the feed after `cursor` holds something the engine sees (a commit that
    /// only changed the ledger or the keyring does not count).
    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool
    {
        let after = try FeedSpot(cursor)
        let deadline = ContinuousClock.now + timeout
        while true {
            // A cancelled wait answers false, as the contract says, even when the read it was
            // making fails for the cancellation.
            if Task.isCancelled { return false }
            do {
                try await catchUp()
            } catch {
                if Task.isCancelled { return false }
                throw error
            }
            let (waiting, position) = try state.withLock {
                (state: inout State) throws(ContainerProtocolError) -> (Bool, FeedCursor) in
                try Self.checkGivenOut(after, state: state)
                let waiting = !state.feed.ids(after: after, limit: 1).ids.isEmpty
                state.caughtUpForWait = waiting
                return (waiting, state.cursor)
            }
            if waiting { return true }
            let remaining = deadline - .now
            guard remaining > .zero, try await inner.waitForChanges(after: position, timeout: remaining) else {
                return false
            }
        }
    }

    private static func checkGivenOut(_ spot: FeedSpot, state: State) throws(ContainerProtocolError) {
        let head = state.view.head?.sequence ?? 0
        guard spot.sequence <= head else {
            throw .invalidRequest(
                "the cursor \"\(spot.cursor.token)\" was never given out by this sealed container (its newest "
                    + "ledger entry is \(head))")
        }
    }
}
