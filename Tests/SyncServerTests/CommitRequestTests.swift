import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// `POST .../commits`, `GET .../entries/ID`: JSON that does not decode, oversized bodies, the
/// server's own limits (device, xattrs) and the container's rules are refused with nothing
/// committed; a commit that loses a race is `409` with the outcome.
@Suite struct CommitRequestTests {
    @Test(arguments: ServerBackend.allCases) func commitsAndEntriesRoundTrip(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(2000))
            #expect(try await fixture.put(chunk).status == 204)
            var state = Sample.file("notes.txt", chunks: [chunk])
            state.xattrs = ["user.tag": [1, 2, 3]]
            let request = Sample.create(state)
            let reply = try await fixture.commit(request)
            #expect(reply.status == 200)
            guard case .committed(let entry) = try reply.decode(CommitOutcome.self) else {
                Issue.record("not committed: \(reply.text)")
                return
            }
            #expect(entry.state == state)
            let fetched = try await fixture.send(.GET, fixture.path("/entries/\(request.id.hex)"))
            #expect(fetched.status == 200)
            #expect(try fetched.decode(RemoteEntry.self) == entry)
            let unknown = try await fixture.send(.GET, fixture.path("/entries/\(FileID.random().hex)"))
            #expect(unknown.status == 404)
            #expect(unknown.code == .entryNotFound)
            // The root exists before any commit.
            let root = try await fixture.send(.GET, fixture.path("/entries/\(FileID.root.hex)"))
            #expect(root.status == 200)
            // A refused outcome is 409 with the outcome: a manifest chunk that is not stored.
            let absent = Sample.chunk(Sample.bytes(10, seed: 42))
            let missing = try await fixture.commit(Sample.create(Sample.file("b", chunks: [absent])))
            #expect(missing.status == 409)
            #expect(try missing.decode(CommitOutcome.self) == .chunksMissing([absent.hash]))
            let info = try await fixture.send(.GET, fixture.path())
            #expect(
                try info.decode(ContainerInfo.self)
                    == ContainerInfo(
                        id: try await fixture.container().containerID, name: "box",
                        features: WireProtocol.Feature.all, access: .editor))
        }
    }

    @Test(arguments: ServerBackend.allCases) func malformedJSONIs400WithTheReason(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let id = FileID.random()
            let valid = try JSONEncoder().encode(Sample.create(Sample.directory("d"), id: id))
            let object = try #require(try JSONSerialization.jsonObject(with: valid) as? [String: Any])
            func edited(_ change: (inout [String: Any]) -> Void) throws -> String {
                var copy = object
                change(&copy)
                return String(decoding: try JSONSerialization.data(withJSONObject: copy), as: UTF8.self)
            }
            let text = String(decoding: valid, as: UTF8.self)
            let bodies: [(String, String, String)] = [
                ("truncated", String(text.dropLast()), "not valid JSON"),
                ("empty", "", "not valid JSON"),
                ("wrong type", try edited { $0["baseVersion"] = "0" }, "baseVersion"),
                ("missing key", try edited { $0["baseVersion"] = nil }, "baseVersion"),
                ("bad id", try edited { $0["id"] = "xyz" }, "FileID"),
                ("array", "[]", "CommitRequest"),
            ]
            for (what, body, mention) in bodies {
                #expect(body != text)
                let reply = try await fixture.send(
                    .POST, fixture.path("/commits"), headers: [("Content-Type", "application/json")],
                    body: Array(body.utf8))
                #expect(reply.status == 400, "\(what)")
                #expect(reply.code == .invalidRequest, "\(what)")
                let message = reply.wireError?.message ?? ""
                #expect(message.contains(mention), "\(what): \(message)")
            }
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await container.entry(id) } == nil)
        }
    }

    @Test(arguments: ServerBackend.allCases) func anOversizedJSONBodyIs413(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            // A valid commit padded past the limit with a long device string.
            let request = CommitRequest(
                id: .random(), baseVersion: 0, change: .put(Sample.directory("big")),
                device: String(repeating: "d", count: WireProtocol.maxJSONBodyBytes))
            let reply = try await fixture.send(.POST, fixture.path("/commits"), json: request)
            #expect(reply.status == 413)
            #expect(reply.code == .tooLarge)
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await container.entry(request.id) }
                    == nil)
        }
    }

    @Test(arguments: ServerBackend.allCases) func deviceAndXattrLimitsAndEntryRulesAre400(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let valid = Sample.directory("d")
            func with(_ change: (inout EntryState) -> Void) -> EntryState {
                var state = valid
                change(&state)
                return state
            }
            let requests: [(String, CommitRequest)] = [
                ("empty device", Sample.create(valid, device: "")),
                (
                    "long device",
                    Sample.create(valid, device: String(repeating: "x", count: WireProtocol.maxDeviceBytes + 1))
                ),
                ("control in device", Sample.create(valid, device: "laptop\n")),
                ("xattr outside user.", Sample.create(with { $0.xattrs = ["security.selinux": [1]] })),
                ("bare user.", Sample.create(with { $0.xattrs = ["user.": [1]] })),
                (
                    "long xattr name",
                    Sample.create(with { $0.xattrs = ["user." + String(repeating: "n", count: 251): [1]] })
                ),
                (
                    "big xattr value",
                    Sample.create(
                        with {
                            $0.xattrs = ["user.big": [UInt8](repeating: 1, count: WireProtocol.maxXattrValueBytes + 1)]
                        })
                ),
                (
                    "xattrs too big together",
                    Sample.create(
                        with { state in
                            for index in 0..<17 {
                                state.xattrs["user.x\(index)"] = [UInt8](repeating: 1, count: 65_000)
                            }
                        })
                ),
                ("delete the root", CommitRequest(id: .root, baseVersion: 0, change: .delete, device: "test")),
                ("name with a slash", Sample.create(Sample.directory("a/b"))),
                (
                    "root as a file",
                    CommitRequest(id: .root, baseVersion: 0, change: .put(Sample.file("")), device: "t")
                ),
            ]
            for (what, request) in requests {
                let reply = try await fixture.commit(request)
                #expect(reply.status == 400, "\(what): \(reply.status) \(reply.text.prefix(200))")
                #expect(reply.code == .invalidRequest, "\(what)")
            }
            let container = try await fixture.container()
            let feed = try await onDisk { () async throws(ContainerProtocolError) in
                try await container.changes(after: .beginning, limit: 100)
            }
            #expect(feed.entries.isEmpty)
            // The limits themselves are allowed.
            let atLimits = Sample.create(
                with {
                    $0.xattrs = ["user." + String(repeating: "n", count: 250): [UInt8](repeating: 1, count: 65_536)]
                },
                device: String(repeating: "é", count: 64))
            #expect(try await fixture.commit(atLimits).status == 200)
        }
    }

    @Test(arguments: ServerBackend.allCases) func racingCommitsOfOneBaseGiveOne200AndOne409(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            for round in 0..<5 {
                let id = FileID.random()
                let created = try await fixture.commit(Sample.create(Sample.file("race\(round)"), id: id))
                guard case .committed(let base) = try created.decode(CommitOutcome.self) else {
                    Issue.record("create failed: \(created.text)")
                    return
                }
                let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                    for side in 0..<2 {
                        let request = CommitRequest(
                            id: id, baseVersion: base.version,
                            change: .put(Sample.file("race\(round)", mtime: Int64(side + 2))), device: "side\(side)")
                        group.addTask { try await fixture.commit(request) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(replies.map(\.status).sorted() == [200, 409])
                guard let winner = replies.first(where: { $0.status == 200 }),
                    let loser = replies.first(where: { $0.status == 409 }),
                    case .committed(let won) = try winner.decode(CommitOutcome.self)
                else { continue }
                #expect(try loser.decode(CommitOutcome.self) == .versionConflict(current: won))
                let container = try await fixture.container()
                #expect(
                    try await onDisk { () async throws(ContainerProtocolError) in try await container.entry(id) } == won
                )
            }
        }
    }
}
