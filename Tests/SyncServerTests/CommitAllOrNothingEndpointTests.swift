import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// `POST .../commits/all-or-nothing`: `200` with every change committed, or with the first
/// refusal and nothing stored; a hostile token holder's calls (too many changes, a body over the
/// limit, JSON that does not decode, a malformed change, a viewer's or another container's
/// token) are refused with nothing committed. Each call is one audit line, as a batch is.
@Suite struct CommitAllOrNothingEndpointTests {
    static let path = "/commits/all-or-nothing"

    @Test(arguments: ServerBackend.allCases) func allAreCommittedOrNoneIs(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(2000))
            #expect(try await fixture.put(chunk).status == 204)
            let folder = Sample.create(Sample.directory("folder"))
            let file = Sample.create(Sample.file("in folder", parent: folder.id, chunks: [chunk]))
            let clash = Sample.create(Sample.directory("folder"))
            let refusedCall = [folder, file, clash]
            let refused = try await fixture.send(
                .POST, fixture.path(Self.path), json: CommitBatchRequest(changes: refusedCall))
            #expect(refused.status == 200, "\(refused.text)")
            guard case .refused(2, .nameTaken(let holder)) = try refused.decode(AllOrNothingOutcome.self) else {
                Issue.record("not refused at the clash: \(refused.text)")
                return
            }
            #expect(holder.id == folder.id, "the clash is with the folder the call made first")
            try await CommitBatchEndpointTests.expectNothingCommitted(refusedCall, fixture)

            let call = [folder, file]
            let reply = try await fixture.send(.POST, fixture.path(Self.path), json: CommitBatchRequest(changes: call))
            #expect(reply.status == 200, "\(reply.text)")
            let answer = try reply.decode(AllOrNothingOutcome.self)
            guard case .committed(let entries) = answer else {
                Issue.record("not committed: \(reply.text)")
                return
            }
            #expect(AllOrNothingAnswerValidation.problem(with: answer, answering: call) == nil)
            let container = try await fixture.container()
            #expect(try await container.entry(file.id) == entries[1])
            #expect(entries[1].state.parent == folder.id && entries[1].version == entries[0].version + 1)

            let empty = try await fixture.send(.POST, fixture.path(Self.path), json: CommitBatchRequest(changes: []))
            #expect(empty.status == 200)
            #expect(try empty.decode(AllOrNothingOutcome.self) == .committed([]))

            let store = try fixture.backend.accessStore(on: fixture.server)
            var summaries: [String] = []
            try await eventually("the commit summaries are flushed") {
                summaries = try await store.audit(container: fixture.name, since: 0, limit: 100)
                    .filter { $0.action == AuditAction.commit.rawValue }.map(\.result)
                return summaries.count >= 2
            }
            #expect(summaries.contains("0 committed, 3 refused") && summaries.contains("2 committed, 0 refused"))
        }
    }

    /// Over the limits (`413`), JSON that is not a batch, a malformed change, an entry named
    /// twice (`400`): nothing committed, the valid changes before the bad one included.
    @Test(arguments: ServerBackend.allCases) func hostileCallsAreRefusedWhole(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let tooMany = (0...CommitBatch.maximumChanges).map { Sample.create(Sample.directory("d\($0)")) }
            let many = try await fixture.send(
                .POST, fixture.path(Self.path), json: CommitBatchRequest(changes: tooMany))
            #expect(many.status == 413 && many.code == .tooLarge, "\(many.status) \(many.text)")
            try await CommitBatchEndpointTests.expectNothingCommitted(Array(tooMany.prefix(3)), fixture)

            let padded = CommitRequest(
                id: .random(), baseVersion: 0, change: .put(Sample.directory("big")),
                device: String(repeating: "d", count: WireProtocol.maxJSONBodyBytes))
            let small = Sample.create(Sample.directory("small"))
            let large = try await fixture.send(
                .POST, fixture.path(Self.path), json: CommitBatchRequest(changes: [small, padded]))
            #expect(large.status == 413 && large.code == .tooLarge, "\(large.status) \(large.text)")

            for (what, body) in [
                ("nested", #"{"changes": "# + String(repeating: "[", count: 50_000) + "}"),
                ("array", "[]"), ("wrong values", #"{"changes": [{}, 1]}"#),
            ] {
                let reply = try await fixture.send(
                    .POST, fixture.path(Self.path), headers: [("Content-Type", "application/json")],
                    body: Array(body.utf8))
                #expect(reply.status == 400 && reply.code == .invalidRequest, "\(what): \(reply.status) \(reply.text)")
            }

            var badName = Sample.directory("x")
            badName.name = Array("a/b".utf8)
            let first = Sample.create(Sample.directory("first"))
            let notLive = CommitRequest(id: .random(), baseVersion: 0, change: .delete, device: "d")
            for (what, bad) in [("name", Sample.create(badName)), ("named twice", first), ("not live", notLive)] {
                let call = [first, Sample.create(Sample.directory("second \(what)")), bad]
                let reply = try await fixture.send(
                    .POST, fixture.path(Self.path), json: CommitBatchRequest(changes: call))
                #expect(reply.status == 400 && reply.code == .invalidRequest, "\(what): \(reply.status) \(reply.text)")
                try await CommitBatchEndpointTests.expectNothingCommitted(call, fixture)
            }
            try await CommitBatchEndpointTests.expectNothingCommitted([small], fixture)
            #expect(try await fixture.commit(Sample.create(Sample.directory("still served"))).status == 200)
        }
    }

    @Test(arguments: ServerBackend.allCases) func otherTokensAreRefused(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let otherToken = try await fixture.makeContainer("other")
            let viewer = try await HostileMemberTests.member(fixture, "vi", role: .viewer)
            let call = CommitBatchRequest(changes: [Sample.create(Sample.directory("intruder"))])
            let other = try await fixture.send(.POST, fixture.path(Self.path), json: call, auth: .token(otherToken))
            #expect(other.status == 403 && other.code == .forbidden, "\(other.status) \(other.text)")
            let viewed = try await fixture.send(.POST, fixture.path(Self.path), json: call, auth: .token(viewer.token))
            #expect(viewed.status == 403 && viewed.code == .forbidden, "\(viewed.status) \(viewed.text)")
            let none = try await fixture.send(.POST, fixture.path(Self.path), json: call, auth: .none)
            #expect(none.status == 401)
            try await CommitBatchEndpointTests.expectNothingCommitted(call.changes, fixture)
        }
    }
}
