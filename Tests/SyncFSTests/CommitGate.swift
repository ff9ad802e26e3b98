import SyncBackend
import SyncBackendTesting
import Synchronization

/// A view of a container whose commits (one by one, batched or all-or-nothing) wait while the
/// gate is closed, and fail while it fails.
final class CommitGate: ForwardingTestContainer, Sendable {
    private struct Gate {
        var closed = false
        var failure: ContainerProtocolError?
        var waiting: [CheckedContinuation<Void, Never>] = []
        var failed = 0
    }

    let base: InMemoryContainer
    private let gate = Mutex(Gate())

    init(_ base: InMemoryContainer) { self.base = base }

    /// Commits wait from now on.
    func close() { gate.withLock { $0.closed = true } }

    /// Commits go through, the waiting ones first.
    func open() { release(failure: nil) }

    /// Commits fail with `error`, the waiting ones first, until `open`.
    func fail(with error: ContainerProtocolError) { release(failure: error) }

    private func release(failure: ContainerProtocolError?) {
        let waiting = gate.withLock { gate in
            gate.closed = false
            gate.failure = failure
            defer { gate.waiting = [] }
            return gate.waiting
        }
        for commit in waiting { commit.resume() }
    }

    /// Commits waiting at the gate now.
    var waiting: Int { gate.withLock { $0.waiting.count } }
    /// Commits failed so far.
    var failed: Int { gate.withLock { $0.failed } }

    func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        try await passGate()
        return try await base.commit(request)
    }

    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await passGate()
        return try await base.commit(batch: requests)
    }

    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try await passGate()
        return try await base.commit(allOrNothing: requests)
    }

    /// Waits while the gate is closed; throws while it fails.
    private func passGate() async throws(ContainerProtocolError) {
        await withCheckedContinuation { (commit: CheckedContinuation<Void, Never>) in
            let waits = gate.withLock { gate in
                if gate.closed { gate.waiting.append(commit) }
                return gate.closed
            }
            if !waits { commit.resume() }
        }
        let failure = gate.withLock { gate -> ContainerProtocolError? in
            if gate.failure != nil { gate.failed += 1 }
            return gate.failure
        }
        if let failure { throw failure }
    }
}

extension CommitGate: HistoryForwardingWrapper {
    /// The history is read past the gate (only commits wait).
    func admittedHistory() async throws(ContainerProtocolError) -> any ContainerHistory { base }
}
