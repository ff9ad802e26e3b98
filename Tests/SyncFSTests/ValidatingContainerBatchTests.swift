import SyncBackend
import SyncBackendTesting
import Synchronization
import Testing

@testable import SyncFS

/// `ValidatingContainer.commit(batch:)`: each outcome is checked against its own request as a
/// single commit's is (one that fails is set aside alone), and the answer must have one outcome
/// per request; otherwise the batch is answered `unavailable` (retried later), never used.
@Suite struct ValidatingContainerBatchTests {
    private func folder(_ name: String) -> CommitRequest {
        CommitRequest(
            id: .random(), baseVersion: 0,
            change: .put(
                EntryState(parent: .root, name: Array(name.utf8), kind: .directory, mode: 0o755, mtime: 1, size: 0)),
            device: "test")
    }

    private func validating(_ base: any Container) -> ValidatingContainer {
        ValidatingContainer(base: base, refused: { _, _ in }, accepted: { _ in })
    }

    @Test func aBatchAnsweredAsAskedPasses() async throws {
        let requests = [folder("a"), folder("b")]
        let outcomes = try await validating(InMemoryContainer()).commit(batch: requests)
        #expect(outcomes.count == 2)
        for (request, outcome) in zip(requests, outcomes) {
            guard case .committed(let entry) = outcome else {
                Issue.record("not committed: \(outcome)")
                continue
            }
            #expect(entry.id == request.id)
        }
    }

    @Test func aBatchAnsweredWithAnotherCountIsUnavailable() async throws {
        let container = validating(LyingBatchContainer(base: InMemoryContainer(), lie: .dropsTheLastOutcome))
        await #expect {
            _ = try await container.commit(batch: [folder("a"), folder("b")])
        } throws: { error in
            guard case .unavailable = error as? ContainerProtocolError else { return false }
            return true
        }
    }

    /// An outcome about another entry is set aside alone ("not committed as asked": that change
    /// is sent again alone, where the failure shows); the batch's good outcomes are used, so one
    /// bad answer does not hold back the rest.
    @Test func anOutcomeAboutAnotherEntryIsSetAsideAlone() async throws {
        let container = validating(LyingBatchContainer(base: InMemoryContainer(), lie: .swapsTheFirstTwo))
        let requests = [folder("a"), folder("b"), folder("c")]
        let outcomes = try await container.commit(batch: requests)
        #expect(outcomes.count == 3)
        #expect(outcomes[0] == .versionConflict(current: nil) && outcomes[1] == .versionConflict(current: nil))
        guard case .committed(let entry) = outcomes[2] else {
            Issue.record("the good outcome was not used: \(outcomes[2])")
            return
        }
        #expect(entry.id == requests[2].id)
    }
}

/// `ValidatingContainer.commit(allOrNothing:)`: the answer is checked whole; any entry or
/// refusal that does not answer the call makes it `unavailable` (nothing of it used).
@Suite struct ValidatingContainerAllOrNothingTests {
    private func folder(_ name: String) -> CommitRequest {
        CommitRequest(
            id: .random(), baseVersion: 0,
            change: .put(
                EntryState(parent: .root, name: Array(name.utf8), kind: .directory, mode: 0o755, mtime: 1, size: 0)),
            device: "test")
    }

    private func validating(_ base: any Container) -> ValidatingContainer {
        ValidatingContainer(base: base, refused: { _, _ in }, accepted: { _ in })
    }

    @Test func answersThatAnswerTheCallPass() async throws {
        let container = validating(InMemoryContainer())
        let requests = [folder("a"), folder("b")]
        let answer = try await container.commit(allOrNothing: requests)
        guard case .committed(let entries) = answer else {
            Issue.record("not committed: \(answer)")
            return
        }
        #expect(entries.map(\.id) == requests.map(\.id))
        let clash = [folder("c"), folder("a")]
        guard case .refused(1, .nameTaken(let holder)) = try await container.commit(allOrNothing: clash) else {
            Issue.record("not refused at the clash")
            return
        }
        #expect(holder.id == requests[0].id)
    }

    @Test(arguments: [AllOrNothingLie.dropsTheLastEntry, .swapsTheEntries, .refusesBeyondTheCall])
    func answersThatDoNotAreUnavailable(lie: AllOrNothingLie) async throws {
        let container = validating(LyingBatchContainer(base: InMemoryContainer(), lie: .swapsTheFirstTwo, atomic: lie))
        await #expect {
            _ = try await container.commit(allOrNothing: [folder("a"), folder("b")])
        } throws: { error in
            guard case .unavailable = error as? ContainerProtocolError else { return false }
            return true
        }
    }
}

enum AllOrNothingLie: Sendable {
    case dropsTheLastEntry
    case swapsTheEntries
    case refusesBeyondTheCall
}

enum BatchLie: Sendable {
    case dropsTheLastOutcome
    case swapsTheFirstTwo
}

/// Commits a batch, then answers it wrongly (`lie`).
private struct LyingBatchContainer: ForwardingTestContainer {
    let base: InMemoryContainer
    let lie: BatchLie
    var atomic: AllOrNothingLie? = nil

    func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError) -> AllOrNothingOutcome {
        let answer = try await base.commit(allOrNothing: requests)
        guard let atomic, case .committed(let entries) = answer else { return answer }
        switch atomic {
        case .dropsTheLastEntry: return .committed(Array(entries.dropLast()))
        case .swapsTheEntries: return .committed(entries.reversed())
        case .refusesBeyondTheCall: return .refused(index: requests.count, outcome: .parentMissing)
        }
    }

    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        let outcomes = try await base.commit(batch: requests)
        switch lie {
        case .dropsTheLastOutcome: return Array(outcomes.dropLast())
        case .swapsTheFirstTwo: return [outcomes[1], outcomes[0]] + outcomes.dropFirst(2)
        }
    }
}
