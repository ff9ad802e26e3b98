import Foundation
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncBackend

/// Every forwarding wrapper hands a batch to its base whole (the protocol's default, one commit
/// after another, would store the changes before a malformed one).
@Suite("Batches through forwarding wrappers")
struct BatchForwardingTests {
    enum Wrapper: String, CaseIterable, CustomTestStringConvertible {
        case faultInjecting, hostile, reconnecting, forwardingTest
        var testDescription: String { rawValue }
    }

    /// A wrapper of `kind` and the container it forwards to; `directory` to remove afterwards.
    static func make(_ kind: Wrapper) throws -> (wrapper: any Container, base: any Container, directory: String?) {
        switch kind {
        case .faultInjecting:
            let base = InMemoryContainer()
            return (FaultInjectingContainer(base), base, nil)
        case .hostile:
            let hostile = HostileContainer()
            return (hostile, hostile.base, nil)
        case .forwardingTest:
            let base = InMemoryContainer()
            return (PlainForwarder(base: base), base, nil)
        case .reconnecting:
            let directory = try makeTemporaryDirectory()
            let base = try LocalContainer.openOrCreate(at: directory + "/container")
            return (ReconnectingContainer(path: directory + "/container", expectedID: base.id), base, directory)
        }
    }

    @Test(arguments: Wrapper.allCases)
    func aBatchIsForwardedWhole(kind: Wrapper) async throws {
        let (wrapper, base, directory) = try Self.make(kind)
        defer { if let directory { try? FileManager.default.removeItem(atPath: directory) } }
        let malformedLast = [
            putRequest(.random(), fileState("one")), putRequest(.random(), fileState("two")),
            deleteRequest(.random(), base: 0),
        ]
        #expect(await protocolError { _ = try await wrapper.commit(batch: malformedLast) }?.isInvalidRequest == true)
        #expect(try await base.wholeFeed().isEmpty, "nothing of a refused batch reaches the base")

        let good = Array(malformedLast.prefix(2))
        let outcomes = try await wrapper.commit(batch: good)
        #expect(try await base.wholeFeed() == outcomes.compactMap(\.committedEntry))
        #expect(outcomes.count == 2)

        let chunks = [rawChunk("a"), rawChunk("b")]
        try await wrapper.putChunks(chunks)
        #expect(try await base.missingChunks(chunks.map(\.hash)).isEmpty)
        let tooMany = (0...CommitBatch.maximumChunks).map { rawChunk("chunk \($0)") }
        #expect(await protocolError { try await wrapper.putChunks(tooMany) }?.isInvalidRequest == true)
        #expect(try await base.missingChunks([tooMany[0].hash]) == [tooMany[0].hash])
    }

    /// All or nothing reaches the base whole: a refusal stores nothing there, a success all.
    @Test(arguments: Wrapper.allCases)
    func anAllOrNothingCommitIsForwardedWhole(kind: Wrapper) async throws {
        let (wrapper, base, directory) = try Self.make(kind)
        defer { if let directory { try? FileManager.default.removeItem(atPath: directory) } }
        let folder = FileID.random()
        let refusedLast = [
            putRequest(folder, directoryState("folder")), putRequest(.random(), fileState("one", in: folder)),
            putRequest(.random(), fileState("orphan", in: .random())),
        ]
        #expect(try await wrapper.commit(allOrNothing: refusedLast) == .refused(index: 2, outcome: .parentMissing))
        #expect(try await base.wholeFeed().isEmpty, "nothing of a refused call reaches the base")

        let answer = try await wrapper.commit(allOrNothing: Array(refusedLast.prefix(2)))
        guard case .committed(let entries) = answer else {
            Issue.record("not committed: \(answer)")
            return
        }
        #expect(try await base.wholeFeed() == entries)
        #expect(entries.map(\.id) == refusedLast.prefix(2).map(\.id))
    }
}

/// A `ForwardingTestContainer` that adds nothing.
private struct PlainForwarder: ForwardingTestContainer {
    let base: InMemoryContainer
}
