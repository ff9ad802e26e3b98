import SyncBackend
import Testing

/// `CommitBatch.checkAnswer`: the answer a batch may cost, whatever entries its refusals name.
struct CommitBatchAnswerBudgetTests {
    private func entry(chunks: Int) -> RemoteEntry {
        let manifest = (0..<chunks).map { _ in
            ChunkRef(hash: ChunkHash(bytes: [UInt8](repeating: 7, count: 32))!, length: 1)
        }
        return RemoteEntry(
            id: FileID.random(), version: 3, isDeleted: false, device: "d",
            state: EntryState(
                parent: .root, name: Array("big".utf8), kind: .file, mode: 0o644, mtime: 0, size: Int64(chunks),
                manifest: manifest))
    }

    /// 1,000 refusals naming one entry of 100,000 chunks would answer with ~10 GB of JSON.
    @Test func aThousandRefusalsNamingAHugeEntryAreRefused() {
        let huge = entry(chunks: 100_000)
        let outcomes = [CommitOutcome](repeating: .nameTaken(by: huge), count: 1_000)
        #expect(throws: ContainerProtocolError.self) { try CommitBatch.checkAnswer(outcomes) }
        // One such refusal is an ordinary answer.
        #expect(throws: Never.self) { try CommitBatch.checkAnswer([.nameTaken(by: huge), .parentMissing]) }
    }

    /// An all-or-nothing answer costs what it carries: one refusal, however many changes were
    /// decided, or every committed entry.
    @Test func anAllOrNothingAnswerIsCheckedAsItIsSent() {
        let huge = entry(chunks: 100_000)
        let refusals = [CommitOutcome](repeating: .nameTaken(by: huge), count: 1_000)
        let refused = AllOrNothingOutcome(deciding: [.committed(entry(chunks: 1))] + refusals)
        #expect(refused == .refused(index: 1, outcome: .nameTaken(by: huge)))
        #expect(throws: Never.self) { try CommitBatch.checkAnswer(refused) }
        let many = (0..<1_000).map { _ in entry(chunks: 1_000) }
        let committed = AllOrNothingOutcome(deciding: many.map(CommitOutcome.committed))
        #expect(committed == .committed(many))
        #expect(throws: ContainerProtocolError.self) { try CommitBatch.checkAnswer(committed) }
    }

    @Test func aFullBatchOfOrdinaryAnswersPasses() {
        let outcomes = (0..<CommitBatch.maximumChanges).map { _ in CommitOutcome.committed(entry(chunks: 4)) }
        #expect(throws: Never.self) { try CommitBatch.checkAnswer(outcomes) }
    }
}
