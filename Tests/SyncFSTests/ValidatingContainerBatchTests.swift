import SyncBackend
import SyncBackendTesting
import Synchronization
import Testing

@testable import SyncFS

/// `ValidatingContainer.commit(batch:)`: each outcome is checked against its own request as a
/// single commit's is, and the answer must have one outcome per request; otherwise the batch is
/// answered `unavailable` (retried later), never used.
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

    @Test(arguments: [BatchLie.dropsTheLastOutcome, .swapsTheOutcomes])
    func aBatchAnsweredOtherwiseIsUnavailable(lie: BatchLie) async throws {
        let container = validating(LyingBatchContainer(base: InMemoryContainer(), lie: lie))
        await #expect {
            _ = try await container.commit(batch: [folder("a"), folder("b")])
        } throws: { error in
            guard case .unavailable = error as? ContainerProtocolError else { return false }
            return true
        }
    }
}

enum BatchLie: Sendable, CustomTestStringConvertible {
    case dropsTheLastOutcome
    case swapsTheOutcomes

    var testDescription: String {
        switch self {
        case .dropsTheLastOutcome: "drops the last outcome"
        case .swapsTheOutcomes: "swaps the outcomes"
        }
    }
}

/// Commits a batch, then answers it wrongly (`lie`).
private struct LyingBatchContainer: ForwardingTestContainer {
    let base: InMemoryContainer
    let lie: BatchLie

    func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        let outcomes = try await base.commit(batch: requests)
        switch lie {
        case .dropsTheLastOutcome: return Array(outcomes.dropLast())
        case .swapsTheOutcomes: return outcomes.reversed()
        }
    }
}
