import Glibc
import SyncBackend
import Synchronization

/// A container that is "unreachable" while a file exists: a switch a test flips from outside the
/// process (`SYNCFS_TEST_OUTAGE_FILE=PATH` in the daemon's environment, doc/CLI.md "Test hooks")
/// to cut one mount off its container, as a network outage would, while the other mounts keep
/// working. Only the environment turns it on (`TestHooks.outageFile`); no option reaches it.
///
/// - While `path` exists, every call fails at once with the retryable `unavailable`, without
///   reaching the base container. Once it is removed, calls go through again.
/// - The existence check is one `access()`, made at most every `checkInterval` (a few ms); calls
///   in between use the last answer.
/// - `waitForChanges` also ends when an outage begins during the wait: it fails with
///   `unavailable` within about `checkInterval`, so a follower never sits out a long wait that
///   ignores the outage. A call already forwarded otherwise finishes as the base answers it.
final class OutageFileContainer: Container, ContainerHistory {
    let base: any Container
    /// The switch: an outage lasts while this file exists.
    let path: String
    let checkInterval: Duration

    private struct Check {
        var at: ContinuousClock.Instant?
        var present = false
    }

    private let check = Mutex(Check())

    init(_ base: any Container, path: String, checkInterval: Duration = .milliseconds(5)) {
        self.base = base
        self.path = path
        self.checkInterval = checkInterval
    }

    var containerID: String { base.containerID }

    /// Whether the outage file exists (looked at again if the last look is older than
    /// `checkInterval`).
    var isInOutage: Bool {
        let now = ContinuousClock.now
        if let known = check.withLock({ state -> Bool? in
            guard let at = state.at, now < at + checkInterval else { return nil }
            return state.present
        }) {
            return known
        }
        let present = access(path, F_OK) == 0
        check.withLock { state in
            state.at = now
            state.present = present
        }
        return present
    }

    private var outageError: ContainerProtocolError {
        .unavailable("injected outage: \(path) exists")
    }

    func admit() throws(ContainerProtocolError) {
        if isInOutage { throw outageError }
    }

    // MARK: Container

    func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try admit()
        return try await base.missingChunks(hashes)
    }

    func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try admit()
        try await base.putChunk(chunk)
    }

    func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try admit()
        return try await base.chunk(hash)
    }

    func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try admit()
        return try await base.entry(id)
    }

    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try admit()
        return try await base.commit(request)
    }

    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try admit()
        return try await base.commit(batch: requests)
    }

    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome {
        try admit()
        return try await base.commit(allOrNothing: requests)
    }

    func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try admit()
        try await base.putChunks(chunks)
    }

    func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        try admit()
        return try await base.changes(after: cursor, limit: limit)
    }

    /// Waits on the base container while watching the switch: whichever comes first ends the
    /// wait (the base's answer, or an outage beginning).
    func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        try admit()
        let base = self.base
        let result = await withTaskGroup(of: Result<Bool, ContainerProtocolError>?.self) { group in
            group.addTask {
                do throws(ContainerProtocolError) {
                    return .success(try await base.waitForChanges(after: cursor, timeout: timeout))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    if isInOutage { return .failure(outageError) }
                    do { try await Task.sleep(for: checkInterval) } catch { return nil }
                }
                return nil
            }
            var first: Result<Bool, ContainerProtocolError>?
            for await result in group {
                if let result {
                    first = result
                    break
                }
            }
            group.cancelAll()
            return first
        }
        // Neither answered: the calling task was cancelled.
        guard let result else { return false }
        return try result.get()
    }

    // MARK: ContainerHistory (the base's, through the same switch)

    func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        try await admittedHistory().history(of: id, limit: limit)
    }

    func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        try await admittedHistory().deletedEntries(before: before, limit: limit)
    }

    /// The base's history once the switch let the call through; `invalidRequest` if the base
    /// keeps none.
    private func admittedHistory() async throws(ContainerProtocolError) -> any ContainerHistory {
        try admit()
        guard let history = base as? any ContainerHistory else {
            throw .invalidRequest("this container keeps no history")
        }
        return history
    }
}
