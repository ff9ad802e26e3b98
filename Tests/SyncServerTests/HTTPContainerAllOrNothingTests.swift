import Foundation
import SyncBackend
import SyncClient
import SyncServer
import Testing

/// `HTTPContainer.commit(allOrNothing:)`: one request on a server that lists it, refused without
/// a request on one that does not (nothing can make it atomic there); answers checked whole
/// (`AllOrNothingAnswerValidation`); `FailoverContainer` passing it on.
@Suite struct HTTPContainerAllOrNothingTests {
    @Test(arguments: [true, false]) func commitsOnlyOnAServerThatListsIt(servesBatches: Bool) async throws {
        try await ServerFixture.run(servesBatches: servesBatches) { fixture in
            let client = try await HTTPContainerBatchTests.client(fixture)
            let folder = Sample.create(Sample.directory("folder"))
            let call = [folder, Sample.create(Sample.file("file", parent: folder.id))]
            guard servesBatches else {
                let error = await #expect(throws: ContainerProtocolError.self) {
                    _ = try await client.commit(allOrNothing: call)
                }
                guard case .invalidRequest(let message)? = error else {
                    Issue.record("expected invalidRequest, got \(String(describing: error))")
                    return
                }
                #expect(message.contains(WireProtocol.Feature.commitAllOrNothing), "\(message)")
                try await CommitBatchEndpointTests.expectNothingCommitted(call, fixture)
                return
            }
            let refused = try await client.commit(allOrNothing: call + [Sample.create(Sample.directory("folder"))])
            guard case .refused(2, .nameTaken(let holder)) = refused else {
                Issue.record("not refused at the clash: \(refused)")
                return
            }
            #expect(holder.id == folder.id)
            try await CommitBatchEndpointTests.expectNothingCommitted(call, fixture)
            let answer = try await client.commit(allOrNothing: call)
            guard case .committed(let entries) = answer else {
                Issue.record("not committed: \(answer)")
                return
            }
            #expect(try await client.entry(call[1].id) == entries[1])
            #expect(try await client.commit(allOrNothing: []) == .committed([]))
        }
    }

    /// Canned answers from a server that lists the endpoint: honest ones are taken, one that
    /// does not answer the call (too few entries, another entry, versions not consecutive, a
    /// refusal of a change the call has not, a "refusal" that commits) is `unavailable`.
    @Test func answersThatDoNotAnswerTheCallAreRefused() async throws {
        let call = [Sample.create(Sample.directory("a")), Sample.create(Sample.directory("b"))]
        func entry(_ request: CommitRequest, _ version: EntryVersion) -> RemoteEntry {
            guard case .put(let state) = request.change else { fatalError("a put") }
            return RemoteEntry(id: request.id, version: version, isDeleted: false, device: "d", state: state)
        }
        let other = Sample.create(Sample.directory("a"))
        let answers: [(String, AllOrNothingOutcome, Bool)] = [
            ("committed", .committed([entry(call[0], 5), entry(call[1], 6)]), true),
            ("refused", .refused(index: 1, outcome: .versionConflict(current: nil)), true),
            ("too few", .committed([entry(call[0], 5)]), false),
            ("another entry", .committed([entry(call[0], 5), entry(other, 6)]), false),
            ("a gap", .committed([entry(call[0], 5), entry(call[1], 7)]), false),
            ("beyond the call", .refused(index: 2, outcome: .parentMissing), false),
            ("a committed refusal", .refused(index: 0, outcome: .committed(entry(call[0], 5))), false),
            ("another's conflict", .refused(index: 0, outcome: .versionConflict(current: entry(other, 3))), false),
        ]
        for (what, answer, accepted) in answers {
            let server = try Self.cannedServer(answer)
            defer { server.stop() }
            let client = try HTTPContainer(
                address: try ServerAddress(parsing: "http://127.0.0.1:\(server.port)/box"), token: "sfs_x",
                containerID: "id")
            do throws(ContainerProtocolError) {
                let got = try await client.commit(allOrNothing: call)
                #expect(accepted, "\(what): accepted \(got)")
                #expect(got == answer, "\(what)")
                #expect(server.requests == 2, "\(what): the features, then one request")
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

    static func cannedServer(_ answer: AllOrNothingOutcome) throws -> CannedHTTPServer {
        let info = try JSONEncoder().encode(ContainerInfo(id: "id", name: "box", features: WireProtocol.Feature.all))
        let response = try JSONEncoder().encode(answer)
        // Both objects' keys in one: each side decodes its own and ignores the rest.
        let body =
            String(decoding: info.dropLast(), as: UTF8.self) + ","
            + String(decoding: response.dropFirst(), as: UTF8.self)
        return try CannedHTTPServer(
            response: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
    }

    @Test func aFailoverContainerPassesItOnToTheServerThatAnswers() async throws {
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
            let call = [Sample.create(Sample.directory("x")), Sample.create(Sample.directory("y"))]
            let answer = try await container.commit(allOrNothing: call)
            #expect(answer.isCommitted, "\(answer)")
            #expect(container.currentServer == live)
            #expect(try await fixture.container().entry(call[1].id) != nil)
        }
    }
}
