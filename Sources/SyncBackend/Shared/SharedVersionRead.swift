import Synchronization

/// A container's newest version as waiters see it, read once for all of them: from the store only
/// when no waiter has read it since the change signal last moved (`generation`) or at least
/// `maxAge` ago, and waiters that look at once share one read (no stampede of first looks). So N
/// idle waiters (a server's pending long polls) cost about one read per `maxAge`, and a commit one
/// read, not one per waiter. Used by `LocalContainer` and the PostgreSQL store.
///
/// Correct because a waiter reads the generation *before* calling `latest`: a commit the read
/// missed moves the generation afterwards (its signal or notification), and the next look reads
/// again; a lost signal is caught by the age bound. A failed read is not shared beyond the
/// waiters already on it.
package final class SharedVersionRead: Sendable {
    private enum Look {
        case known(EntryVersion)
        case reading(Task<Result<EntryVersion, ContainerProtocolError>, Never>)
    }

    private struct State {
        var cached: (generation: UInt64, version: EntryVersion, readAt: ContinuousClock.Instant)?
        var reading:
            (
                generation: UInt64, startedAt: ContinuousClock.Instant,
                task: Task<Result<EntryVersion, ContainerProtocolError>, Never>
            )?
    }

    private let state = Mutex(State())
    /// How many reads were started (for tests).
    package let reads = Atomic<Int>(0)

    package init() {}

    /// The newest version as of `generation`, calling `read` only when needed (see above).
    package func latest(
        atGeneration generation: UInt64, maxAge: Duration,
        read: @escaping @Sendable () async throws(ContainerProtocolError) -> EntryVersion
    ) async throws(ContainerProtocolError) -> EntryVersion {
        let now = ContinuousClock.now
        let look = state.withLock { state -> Look in
            if let cached = state.cached, cached.generation == generation, now - cached.readAt < maxAge {
                return .known(cached.version)
            }
            if let reading = state.reading, reading.generation == generation { return .reading(reading.task) }
            reads.add(1, ordering: .relaxed)
            let task = Task { () -> Result<EntryVersion, ContainerProtocolError> in
                do throws(ContainerProtocolError) {
                    return .success(try await read())
                } catch {
                    return .failure(error)
                }
            }
            state.reading = (generation, now, task)
            return .reading(task)
        }
        switch look {
        case .known(let version):
            return version
        case .reading(let task):
            let result = await task.value
            state.withLock { state in
                guard let reading = state.reading, reading.task == task else { return }
                state.reading = nil
                if case .success(let version) = result {
                    state.cached = (reading.generation, version, reading.startedAt)
                }
            }
            return try result.get()
        }
    }
}
