import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// `GET .../changes` and `.../changes/wait`: parameters are checked strictly; the wait is a long
/// poll that answers as soon as a commit lands.
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
