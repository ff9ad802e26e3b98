import Foundation
import SyncBackend
import SyncClient
import SyncServer
import Testing

/// `HTTPContainer.commit(batch:)` and `putChunks`: one request per batch on a server that lists
/// the batch endpoints, one call per change or chunk on a server older than them (same
/// outcomes), answers checked whole (an answer with the wrong number of outcomes or about other
/// entries is `unavailable`), and `FailoverContainer` passing batches on.
@Suite struct HTTPContainerBatchTests {
    static func client(_ fixture: ServerFixture) async throws -> HTTPContainer {
        let address = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
        let info = try await HTTPContainer.fetchInfo(address: address, token: fixture.token)
        return try HTTPContainer(address: address, token: fixture.token, containerID: info.id)
    }

    /// A folder, a file in it and a name clash: every outcome as the container gives it.
    static func sampleBatch(chunk: EncodedChunk) -> [CommitRequest] {
        let folder = Sample.create(Sample.directory("folder"))
        return [
            folder, Sample.create(Sample.file("file", parent: folder.id, chunks: [chunk])),
            Sample.create(Sample.directory("folder")),
        ]
    }

    static func expectSampleOutcomes(
        _ outcomes: [CommitOutcome], _ batch: [CommitRequest], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard outcomes.count == 3, case .committed(let folder) = outcomes[0], case .committed = outcomes[1] else {
            Issue.record("not committed: \(outcomes)", sourceLocation: sourceLocation)
            return
        }
        #expect(folder.id == batch[0].id, sourceLocation: sourceLocation)
        #expect(outcomes[2] == .nameTaken(by: folder), sourceLocation: sourceLocation)
    }

    @Test(arguments: [true, false]) func batchesCommitOnNewAndOldServers(servesBatches: Bool) async throws {
        try await ServerFixture.run(servesBatches: servesBatches) { fixture in
            // What an old server answers: no features, 404 and 405 on the batch paths.
            let info = try await fixture.send(.GET, fixture.path())
            #expect(try info.decode(ContainerInfo.self).features == (servesBatches ? WireProtocol.Feature.all : nil))
            let commits = try await fixture.send(
                .POST, fixture.path("/commits/batch"), json: CommitBatchRequest(changes: []))
            let chunks = try await fixture.send(.POST, fixture.path("/chunks/batch"), body: [])
            if servesBatches {
                #expect(commits.status == 200 && chunks.status == 204)
            } else {
                #expect(commits.status == 404 && commits.code == .notFound, "\(commits.text)")
                #expect(chunks.status == 405 && chunks.code == .methodNotAllowed, "\(chunks.text)")
            }

            let client = try await Self.client(fixture)
            let stored = [Sample.chunk(Sample.bytes(900)), Sample.chunk(Sample.bytes(300, seed: 3))]
            try await client.putChunks(stored)
            #expect(try await client.missingChunks(stored.map(\.hash)).isEmpty)
            let batch = Self.sampleBatch(chunk: stored[0])
            let outcomes = try await client.commit(batch: batch)
            Self.expectSampleOutcomes(outcomes, batch)
            #expect(try await client.entry(batch[1].id)?.state.parent == batch[0].id)
            #expect(try await client.commit(batch: []).isEmpty)
        }
    }

    /// The client sends nothing the server would refuse for its shape.
    @Test func malformedBatchesAreRefusedBeforeAnythingIsSent() async throws {
        try await ServerFixture.run { fixture in
            let client = try await Self.client(fixture)
            let change = Sample.create(Sample.directory("twice"))
            let many = (0...CommitBatch.maximumChanges).map { Sample.create(Sample.directory("d\($0)")) }
            let chunks = (0...CommitBatch.maximumChunks).map { Sample.chunk([UInt8(truncatingIfNeeded: $0)]) }
            let calls: [(String, @Sendable () async throws -> Void)] = [
                ("an entry twice", { _ = try await client.commit(batch: [change, change]) }),
                ("too many changes", { _ = try await client.commit(batch: many) }),
                ("too many chunks", { try await client.putChunks(chunks) }),
            ]
            for (what, call) in calls {
                let error = await #expect(throws: ContainerProtocolError.self, "\(what)") { try await call() }
                guard case .invalidRequest? = error else {
                    Issue.record("\(what): expected invalidRequest, got \(String(describing: error))")
                    continue
                }
            }
            #expect(try await fixture.container().entry(change.id) == nil)
        }
    }

    /// A server that lists the batch endpoints and answers every request with one canned body
    /// (a `ContainerInfo` and a `CommitBatchResponse` at once): one request per batch, the
    /// features asked once; an answer with too few outcomes, or an outcome about another entry,
    /// is `unavailable`.
    @Test func answersThatDoNotAnswerTheBatchAreRefused() async throws {
        let batch = [Sample.create(Sample.directory("a")), Sample.create(Sample.directory("b"))]
        func committed(_ request: CommitRequest) -> CommitOutcome {
            guard case .put(let state) = request.change else { return .parentMissing }
            return .committed(RemoteEntry(id: request.id, version: 5, isDeleted: false, device: "d", state: state))
        }
        let honest = [committed(batch[0]), .versionConflict(current: nil)]
        let other = Sample.create(Sample.directory("a"))
        let answers: [(String, [CommitOutcome], Bool)] = [
            ("honest", honest, true),
            ("too few", [committed(batch[0])], false),
            ("too many", honest + honest, false),
            ("another entry", [committed(other), .versionConflict(current: nil)], false),
            ("swapped", [.versionConflict(current: nil), committed(batch[0])], false),
        ]
        for (what, outcomes, accepted) in answers {
            let server = try Self.cannedServer(outcomes)
            defer { server.stop() }
            let client = try HTTPContainer(
                address: try ServerAddress(parsing: "http://127.0.0.1:\(server.port)/box"), token: "sfs_x",
                containerID: "id")
            do throws(ContainerProtocolError) {
                let got = try await client.commit(batch: batch)
                #expect(accepted, "\(what): accepted \(got)")
                #expect(got == outcomes, "\(what)")
                _ = try await client.commit(batch: batch)
                #expect(server.requests == 3, "\(what): the features once, then one request per batch")
            } catch {
                #expect(!accepted, "\(what): \(error)")
                guard case .unavailable(let message) = error else {
                    Issue.record("\(what): expected unavailable, got \(error)")
                    continue
                }
                #expect(message.contains("against the protocol"), "\(what): \(message)")
            }
        }
    }

    static func cannedServer(_ outcomes: [CommitOutcome]) throws -> CannedHTTPServer {
        let info = try JSONEncoder().encode(ContainerInfo(id: "id", name: "box", features: WireProtocol.Feature.all))
        let response = try JSONEncoder().encode(CommitBatchResponse(outcomes: outcomes))
        // Both objects' keys in one: each side decodes its own and ignores the rest.
        let body =
            String(decoding: info.dropLast(), as: UTF8.self) + ","
            + String(decoding: response.dropFirst(), as: UTF8.self)
        return try CannedHTTPServer(
            response: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
    }

    @Test func aFailoverContainerPassesBatchesOn() async throws {
        try await ServerFixture.run { fixture in
            let live = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
            let info = try await HTTPContainer.fetchInfo(address: live, token: fixture.token)
            let deadPort = try CannedHTTPServer.unusedPort()
            let container = FailoverContainer(servers: [
                try HTTPContainer(
                    address: try ServerAddress(parsing: "http://127.0.0.1:\(deadPort)/box"), token: fixture.token,
                    containerID: info.id),
                try HTTPContainer(address: live, token: fixture.token, containerID: info.id),
            ])
            let chunk = Sample.chunk(Sample.bytes(1200))
            try await container.putChunks([chunk])
            let batch = Self.sampleBatch(chunk: chunk)
            Self.expectSampleOutcomes(try await container.commit(batch: batch), batch)
            #expect(container.currentServer == live)
        }
    }
}
