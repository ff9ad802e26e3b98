import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import TestSupport
import Testing

@testable import SyncClient

/// `GET .../changes` and `.../changes/wait`: parameters are checked strictly; pages come in binary
/// only to a request whose `Accept` asks for it; the wait is a long poll that answers as soon as
/// a commit lands.
@Suite struct ChangeFeedRequestTests {
    @Test(arguments: ServerBackend.allCases) func badLimitTimeoutCursorOrParameterAre400(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let queries = [
                "/changes?limit=0", "/changes?limit=10001", "/changes?limit=x", "/changes?limit=-1", "/changes?limit=",
                "/changes?limit=1&limit=2", "/changes?after=abc", "/changes?after=-1", "/changes?after=01",
                "/changes?cursor=1", "/changes?timeout=10", "/changes/wait?timeout=-1", "/changes/wait?timeout=30001",
                "/changes/wait?timeout=1e3", "/changes/wait?timeout=0&after=x", "/changes/wait?limit=5",
                "/commits?x=1",
            ]
            for query in queries {
                let method: HTTPMethod = query.hasPrefix("/commits") ? .POST : .GET
                let reply = try await fixture.send(method, fixture.path(query))
                #expect(reply.status == 400, "\(query): \(reply.status) \(reply.text)")
                #expect(reply.code == .invalidRequest, "\(query)")
            }
        }
    }

    @Test(arguments: ServerBackend.allCases) func pagesFollowTheCursor(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            var ids: [FileID] = []
            for index in 0..<5 {
                let request = Sample.create(Sample.directory("d\(index)"))
                ids.append(request.id)
                #expect(try await fixture.commit(request).status == 200)
            }
            let first = try await fixture.send(.GET, fixture.path("/changes?limit=3&after="))
            let page = try first.decode(ChangeBatch.self)
            #expect(page.entries.map(\.id) == Array(ids.prefix(3)))
            #expect(page.moreComing)
            let next = try await fixture.send(.GET, fixture.path("/changes?after=\(page.cursor.token)"))
            let rest = try next.decode(ChangeBatch.self)
            #expect(rest.entries.map(\.id) == Array(ids.suffix(2)))
            #expect(!rest.moreComing)
            // Nothing newer: an immediate answer with timeout=0.
            let idle = try await fixture.send(.GET, fixture.path("/changes/wait?after=\(rest.cursor.token)&timeout=0"))
            #expect(try idle.decode(WaitResponse.self) == WaitResponse(changed: false))
            let behind = try await fixture.send(
                .GET, fixture.path("/changes/wait?after=\(page.cursor.token)&timeout=0"))
            #expect(try behind.decode(WaitResponse.self) == WaitResponse(changed: true))
        }
    }

    @Test(arguments: ServerBackend.allCases) func pagesComeInBinaryOnlyWhenAcceptAsksForThem(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(50))
            #expect(try await fixture.put(chunk).status == 204)
            for state in [Sample.directory("d"), Sample.file("f", chunks: [chunk])] {
                #expect(try await fixture.commit(Sample.create(state)).status == 200)
            }
            let json = try await fixture.send(.GET, fixture.path("/changes"))
            #expect(json.headers.first(name: "Content-Type") == "application/json")
            let expected = try json.decode(ChangeBatch.self)
            #expect(expected.entries.count == 2)
            let type = ChangePageFormat.mediaType
            for accept in [[type], ["application/json", type], ["application/json, \(type);q=0.8"]] {
                let binary = try await fixture.send(
                    .GET, fixture.path("/changes"), headers: accept.map { ("Accept", $0) })
                #expect(binary.status == 200)
                #expect(binary.headers.first(name: "Content-Type") == type, "\(accept)")
                #expect(binary.headers.first(name: "Vary") == "Accept")
                #expect(try ChangePageFormat.decode(binary.body) == expected, "\(accept)")
            }
            for accept in ["*/*", "\(type);q=0", "application/json"] {
                let reply = try await fixture.send(.GET, fixture.path("/changes"), headers: [("Accept", accept)])
                #expect(try reply.decode(ChangeBatch.self) == expected, "\(accept)")
            }
            // The client asks for the binary form and reads it.
            let address = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
            let info = try await HTTPContainer.fetchInfo(address: address, token: fixture.token)
            let client = try HTTPContainer(address: address, token: fixture.token, containerID: info.id)
            let page = try await onDisk { () async throws(ContainerProtocolError) in
                try await client.changes(after: .beginning, limit: 10)
            }
            #expect(page == expected)
        }
    }

    /// A server older than the binary form answers JSON whatever `Accept` says; a hostile one may
    /// send any bytes under either type: the client reads each form by its `Content-Type`, and a
    /// body that does not decode is `unavailable` (the follower retries; nothing is deleted).
    @Test func theClientReadsEachFormByItsContentType() throws {
        let batch = ChangeBatch(
            entries: [
                RemoteEntry(id: .random(), version: 4, isDeleted: false, device: "d", state: Sample.directory("x"))
            ],
            cursor: FeedCursor(token: "4"), moreComing: false)
        let address = try ServerAddress(parsing: "http://127.0.0.1:1/box")
        func answer(_ type: String, _ body: [UInt8]) -> Answer {
            Answer(status: 200, headers: ["Content-Type": type], body: body)
        }
        let json = Array(try JSONEncoder().encode(batch))
        let binary = try ChangePageFormat.encode(batch)
        let type = ChangePageFormat.mediaType
        #expect(try WireAnswer.decodeChangePage(answer("application/json", json), address: address) == batch)
        #expect(try WireAnswer.decodeChangePage(answer("\(type.uppercased()); v=1", binary), address: address) == batch)
        for (contentType, body) in [(type, json), ("application/json", binary), (type, Array(binary.dropLast()))] {
            #expect {
                _ = try WireAnswer.decodeChangePage(answer(contentType, body), address: address)
            } throws: { error in
                guard case .unavailable(let message) = error as? ContainerProtocolError else { return false }
                return message.contains("does not decode")
            }
        }
    }

    /// The answer is pushed: it comes well before the container's own re-check could have found
    /// the commit (the wait is pending before the commit starts, and the time
    /// runs from the commit's end).
    @Test(arguments: ServerBackend.allCases) func aWaitAnswersAsSoonAsACommitLands(backend: ServerBackend) async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let cursor = try await fixture.send(.GET, fixture.path("/changes")).decode(ChangeBatch.self).cursor
            let waited = Task {
                try await fixture.send(.GET, fixture.path("/changes/wait?after=\(cursor.token)&timeout=20000"))
            }
            try await fixture.server.waitUntil("the wait is pending") { $0.pendingChangeWaits == 1 }
            #expect(try await fixture.commit(Sample.create(Sample.directory("wake"))).status == 200)
            let committed = ContinuousClock.now
            let reply = try await waited.value
            let elapsed = ContinuousClock.now - committed
            #expect(try reply.decode(WaitResponse.self) == WaitResponse(changed: true))
            // Well under either backend's re-check (embedded with its reliable signal: 15 s,
            // PostgreSQL: 5 s): only the push can answer this early, even on a loaded machine.
            #expect(elapsed < .seconds(4), "the wait answered \(elapsed) after the commit")
        }
    }
}
