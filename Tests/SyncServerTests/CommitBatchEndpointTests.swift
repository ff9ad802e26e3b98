import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// `POST .../commits/batch`: one outcome per change (refusals included), the same outcomes as
/// the container's own `commit(batch:)`; a hostile token holder's batches (too many changes, too
/// many bytes, JSON nested without end, an entry named twice, a malformed change anywhere,
/// another container's token) are refused with nothing committed.
@Suite struct CommitBatchEndpointTests {
    static let path = "/commits/batch"

    @Test(arguments: ServerBackend.allCases) func eachChangeGetsItsOwnOutcome(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(3000))
            #expect(try await fixture.put(chunk).status == 204)
            let absent = Sample.chunk(Sample.bytes(10, seed: 9))
            let folder = Sample.create(Sample.directory("folder"))
            let file = Sample.create(Sample.file("in folder", parent: folder.id, chunks: [chunk]))
            let lacking = Sample.create(Sample.file("lacking", chunks: [absent]))
            let stale = CommitRequest(id: .random(), baseVersion: 7, change: .put(Sample.directory("x")), device: "d")
            let clash = Sample.create(Sample.directory("folder"))
            let batch = [folder, file, lacking, stale, clash]
            let reply = try await fixture.send(.POST, fixture.path(Self.path), json: CommitBatchRequest(changes: batch))
            #expect(reply.status == 200, "\(reply.text)")
            let outcomes = try reply.decode(CommitBatchResponse.self).outcomes
            try #require(outcomes.count == batch.count)
            guard case .committed(let madeFolder) = outcomes[0], case .committed(let madeFile) = outcomes[1] else {
                Issue.record("the folder and its file were not committed: \(outcomes)")
                return
            }
            #expect(madeFolder.id == folder.id && madeFile.id == file.id)
            #expect(madeFile.state.parent == folder.id, "the file went into the folder made before it")
            #expect(outcomes[2] == .chunksMissing([absent.hash]))
            #expect(outcomes[3] == .versionConflict(current: nil))
            #expect(outcomes[4] == .nameTaken(by: madeFolder))
            #expect(CommitBatchAnswerValidation.problem(with: outcomes, answering: batch) == nil)

            let container = try await fixture.container()
            #expect(try await container.entry(file.id) == madeFile)
            #expect(try await container.entry(lacking.id) == nil)
            #expect(try await container.entry(clash.id) == nil)

            // An empty batch is answered with no outcomes.
            let empty = try await fixture.send(.POST, fixture.path(Self.path), json: CommitBatchRequest(changes: []))
            #expect(empty.status == 200)
            #expect(try empty.decode(CommitBatchResponse.self).outcomes.isEmpty)
        }
    }

    /// Two fresh containers: the batch sent over HTTP to one and given to the other directly
    /// get the same outcomes, and leave the same entries.
    @Test func aBatchOverHTTPIsTheBatchGivenDirectly() async throws {
        try await ServerFixture.run(backend: .embedded) { fixture in
            _ = try await fixture.makeContainer("twin")
            let twin = try await fixture.backend.container("twin")
            let chunk = Sample.chunk(Sample.bytes(500))
            #expect(try await fixture.put(chunk).status == 204)
            try await twin.putChunk(chunk)
            let folder = Sample.create(Sample.directory("a"))
            let file = Sample.create(Sample.file("f", parent: folder.id, chunks: [chunk]))
            let stale = CommitRequest(
                id: .random(), baseVersion: 3, change: .put(Sample.directory("b")), device: "test-device")
            let batch = [
                folder, file, Sample.create(Sample.directory("a")), stale,
                Sample.create(Sample.file("orphan", parent: .random())), Sample.create(Sample.file("g")),
            ]

            let reply = try await fixture.send(.POST, fixture.path(Self.path), json: CommitBatchRequest(changes: batch))
            #expect(reply.status == 200, "\(reply.text)")
            let overHTTP = try reply.decode(CommitBatchResponse.self).outcomes
            let direct = try await twin.commit(batch: batch)
            #expect(overHTTP == direct)
            let box = try await fixture.container()
            for request in batch {
                #expect(try await box.entry(request.id) == twin.entry(request.id), "\(request.id)")
            }
        }
    }

    @Test(arguments: ServerBackend.allCases) func moreChangesThanTheLimitAre413(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let batch = (0...CommitBatch.maximumChanges).map { Sample.create(Sample.directory("d\($0)")) }
            let reply = try await fixture.send(.POST, fixture.path(Self.path), json: CommitBatchRequest(changes: batch))
            #expect(reply.status == 413 && reply.code == .tooLarge, "\(reply.status) \(reply.text)")
            #expect(reply.wireError?.message.contains("\(CommitBatch.maximumChanges)") == true)
            try await Self.expectNothingCommitted(batch, fixture)
        }
    }

    @Test(arguments: ServerBackend.allCases) func aBodyOverTheLimitIs413(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let padded = CommitRequest(
                id: .random(), baseVersion: 0, change: .put(Sample.directory("big")),
                device: String(repeating: "d", count: WireProtocol.maxJSONBodyBytes))
            let batch = [Sample.create(Sample.directory("small")), padded]
            let reply = try await fixture.send(.POST, fixture.path(Self.path), json: CommitBatchRequest(changes: batch))
            #expect(reply.status == 413 && reply.code == .tooLarge, "\(reply.status) \(reply.text)")
            try await Self.expectNothingCommitted(batch, fixture)
        }
    }

    /// JSON nested far deeper than any request, a body of nothing but brackets, and a huge array
    /// of wrong values: `400` with the reason, and the server goes on answering.
    @Test(arguments: ServerBackend.allCases) func hostileJSONIs400(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let depth = 100_000
            let nested =
                #"{"changes": "# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
            let wrong = #"{"changes": ["# + Array(repeating: "{}", count: 500_000).joined(separator: ",") + "]}"
            let valid = Sample.create(Sample.directory("kept out"))
            let validJSON = String(decoding: try JSONEncoder().encode(valid), as: UTF8.self)
            let truncated = #"{"changes": ["# + validJSON + ", " + String(validJSON.dropLast(3))
            for (what, body) in [
                ("nested", nested), ("wrong values", wrong), ("truncated", truncated), ("array", "[]"),
            ] {
                let reply = try await fixture.send(
                    .POST, fixture.path(Self.path), headers: [("Content-Type", "application/json")],
                    body: Array(body.utf8))
                #expect(reply.status == 400 && reply.code == .invalidRequest, "\(what): \(reply.status) \(reply.text)")
                #expect(reply.wireError?.message.contains("CommitBatchRequest") == true, "\(what): \(reply.text)")
            }
            try await Self.expectNothingCommitted([valid], fixture)
            #expect(try await fixture.commit(Sample.create(Sample.directory("still served"))).status == 200)
        }
    }

    /// A change that breaks a rule anywhere in the batch, or an entry named twice: `400` naming
    /// the change, and none of the batch committed (also the valid changes before it).
    @Test(arguments: ServerBackend.allCases) func aMalformedChangeAnywhereIs400AndNothingCommitted(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let first = Sample.create(Sample.directory("first"))
            var badName = Sample.directory("x")
            badName.name = Array("a/b".utf8)
            var badXattr = Sample.directory("y")
            badXattr.xattrs = ["trusted.secret": [1]]
            let twice = Sample.create(Sample.directory("twice"))
            let malformed: [(String, CommitRequest, String)] = [
                ("device", Sample.create(Sample.directory("z"), device: ""), "device"),
                ("name", Sample.create(badName), "name"),
                ("xattr", Sample.create(badXattr), "user."),
                ("root deleted", CommitRequest(id: .root, baseVersion: 1, change: .delete, device: "d"), "root"),
                (
                    "named twice", CommitRequest(id: twice.id, baseVersion: 0, change: .delete, device: "d"),
                    "second time"
                ),
            ]
            for (what, bad, mention) in malformed {
                let batch = [first, twice, bad, Sample.create(Sample.directory("after \(what)"))]
                let reply = try await fixture.send(
                    .POST, fixture.path(Self.path), json: CommitBatchRequest(changes: batch))
                #expect(reply.status == 400 && reply.code == .invalidRequest, "\(what): \(reply.status) \(reply.text)")
                let message = reply.wireError?.message ?? ""
                #expect(message.contains("change 2") && message.contains(mention), "\(what): \(message)")
                try await Self.expectNothingCommitted(batch, fixture)
            }
        }
    }

    @Test(arguments: ServerBackend.allCases) func anotherContainersTokenIs403(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let otherToken = try await fixture.makeContainer("other")
            let batch = [Sample.create(Sample.directory("intruder"))]
            let reply = try await fixture.send(
                .POST, fixture.path(Self.path), json: CommitBatchRequest(changes: batch), auth: .token(otherToken))
            #expect(reply.status == 403 && reply.code == .forbidden, "\(reply.status) \(reply.text)")
            let none = try await fixture.send(
                .POST, fixture.path(Self.path), json: CommitBatchRequest(changes: batch), auth: .none)
            #expect(none.status == 401)
            try await Self.expectNothingCommitted(batch, fixture)
        }
    }

    static func expectNothingCommitted(
        _ batch: [CommitRequest], _ fixture: ServerFixture, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let container = try await fixture.container()
        for request in batch where request.id != .root {
            let entry = try await onDisk { () async throws(ContainerProtocolError) in
                try await container.entry(request.id)
            }
            #expect(entry == nil, "\(request.id) was committed", sourceLocation: sourceLocation)
        }
    }
}
