import Foundation
import SyncBackend
import Synchronization

/// The engine's reads: entries and the change feed, answered from what the ledger vouches for.
extension SealedContainer {
    // MARK: - Entries and the feed

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await catchUp()
        return state.withLock { $0.tree.entry(id) }
    }

    /// A page of the feed underneath, with what the engine sees of it: the records the ledger
    /// vouches for at exactly these versions (an older version in the page was superseded, and
    /// the newer one comes later); ledger entries and keyrings are never shown. Pages with nothing
    /// to show are read through, so an answer is empty only at the end of the feed.
    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        try checkAlarm()
        // The page a wait just read (its entries are vouched; a page read a moment ago is still a
        // right answer: what came since follows it).
        let waited = state.withLock { state -> ChangeBatch? in
            defer { state.lastPage = nil }
            guard let last = state.lastPage, last.cursor == cursor, last.page.entries.count <= limit else { return nil }
            return last.page
        }
        if let waited { return waited }
        // A commit of this device the container said it stored is checked by the next read.
        if state.withLock({ $0.ownCommit != nil }) { try await catchUp() }
        var position = cursor
        while true {
            let page = try await inner.changes(after: position, limit: limit)
            // The page may hold commits made after the catch-up: read them too before answering.
            let behind = state.withLock { state in
                page.entries.contains { entry in
                    state.view.vouched[entry.id].map { $0.stored.version < entry.version } ?? true
                }
            }
            if behind { try await catchUp() }
            let entries = state.withLock { state in
                page.entries.compactMap { entry -> RemoteEntry? in
                    guard let shown = state.tree.entries[entry.id], shown.version == entry.version else { return nil }
                    return shown
                }
            }
            if entries.isEmpty && page.moreComing {
                position = page.cursor
                continue
            }
            return ChangeBatch(entries: entries, cursor: page.cursor, moreComing: page.moreComing)
        }
    }

    /// True as soon as the feed after `cursor` holds something the engine sees (a commit that
    /// only changed the ledger or the keyring does not count).
    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool
    {
        let deadline = ContinuousClock.now + timeout
        var position = cursor
        while true {
            // A cancelled wait answers false, as the contract says, even when the read it was
            // making fails for the cancellation.
            if Task.isCancelled { return false }
            let page: ChangeBatch
            do {
                page = try await changes(after: position, limit: 64)
            } catch {
                if Task.isCancelled { return false }
                throw error
            }
            if !page.entries.isEmpty {
                state.withLock { $0.lastPage = (position, page) }
                return true
            }
            position = page.cursor
            let remaining = deadline - .now
            guard remaining > .zero, try await inner.waitForChanges(after: position, timeout: remaining) else {
                return false
            }
        }
    }
}
