import SyncBackend
import Testing

/// The batch formats on their own: `ChunkBatchFormat` frames read back whatever the parts a body
/// arrives in, and `CommitBatchAnswerValidation` refuses every outcome that cannot answer its
/// change.
@Suite struct BatchWireTests {
    @Test func framesReadBackInAnyParts() throws {
        let text = Array(String(repeating: "frames ", count: 100).utf8)
        let chunks = [
            Sample.chunk(Sample.bytes(100)), Sample.chunk([]), text.withUnsafeBytes { ChunkCodec.encode($0, level: 6) },
        ]
        let body = try ChunkBatchFormat.encode(chunks)
        #expect(body.count == chunks.reduce(0) { $0 + ChunkBatchFormat.frameHeaderBytes + $1.payload.count })
        for partSize in [1, 7, 41, 100, body.count] {
            var parser = ChunkBatchParser(declaredLength: body.count)
            var start = 0
            while start < body.count {
                let part = Array(body[start..<min(body.count, start + partSize)])
                try part.withUnsafeBytes { try parser.feed($0) }
                start += partSize
            }
            #expect(try parser.finish() == chunks, "parts of \(partSize)")
        }
        var empty = ChunkBatchParser()
        try [UInt8]().withUnsafeBytes { try empty.feed($0) }
        #expect(try empty.finish().isEmpty)
    }

    @Test func encodingRefusesChunksOverTheLimits() {
        var huge = Sample.chunk([1])
        huge.plainLength = WireProtocol.maxChunkPlainLength + 1
        #expect(throws: ContainerProtocolError.self) { _ = try ChunkBatchFormat.encode([huge]) }
    }

    @Test func outcomesThatCannotAnswerTheirChangeAreRefused() {
        let file = Sample.file("f", chunks: [Sample.chunk([1, 2])])
        let put = CommitRequest(id: .random(), baseVersion: 3, change: .put(file), device: "d")
        let delete = CommitRequest(id: put.id, baseVersion: 3, change: .delete, device: "d")
        func entry(_ id: FileID, version: EntryVersion = 4, deleted: Bool = false) -> RemoteEntry {
            RemoteEntry(id: id, version: version, isDeleted: deleted, device: "d", state: file)
        }
        let other = FileID.random()
        let accepted: [(CommitOutcome, CommitRequest)] = [
            (.committed(entry(put.id)), put), (.committed(entry(put.id, deleted: true)), delete),
            (.versionConflict(current: nil), put), (.versionConflict(current: entry(put.id, version: 9)), delete),
            (.nameTaken(by: entry(other)), put), (.parentMissing, put), (.wouldCreateCycle, put),
            (.directoryNotEmpty, delete), (.chunksMissing(file.manifest.map(\.hash)), put),
        ]
        for (outcome, request) in accepted {
            #expect(CommitBatchAnswerValidation.problem(with: [outcome], answering: [request]) == nil, "\(outcome)")
        }
        let refused: [(String, CommitOutcome, CommitRequest)] = [
            ("another entry committed", .committed(entry(other)), put),
            ("a put as a tombstone", .committed(entry(put.id, deleted: true)), put),
            ("a delete as live", .committed(entry(put.id)), delete),
            ("not above the base", .committed(entry(put.id, version: 3)), put),
            ("an invalid version", .committed(entry(put.id, version: 0)), put),
            ("a conflict with another entry", .versionConflict(current: entry(other)), put),
            ("the name taken by itself", .nameTaken(by: entry(put.id)), put),
            ("the name taken by a tombstone", .nameTaken(by: entry(other, deleted: true)), put),
            ("a delete taking a name", .nameTaken(by: entry(other)), delete),
            ("a delete's parent", .parentMissing, delete),
            ("a delete's chunks", .chunksMissing(file.manifest.map(\.hash)), delete),
            ("chunks not in the manifest", .chunksMissing([Sample.chunk([9]).hash]), put),
            ("no chunks", .chunksMissing([]), put),
        ]
        for (what, outcome, request) in refused {
            #expect(CommitBatchAnswerValidation.problem(with: [outcome], answering: [request]) != nil, "\(what)")
        }
        #expect(CommitBatchAnswerValidation.problem(with: [], answering: [put]) != nil)
    }
}
