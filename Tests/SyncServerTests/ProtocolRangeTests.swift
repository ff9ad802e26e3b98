import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// doc/PROTOCOL.md's rules for cursors, numbers and names, as a hostile token holder tries them:
/// each is `400 invalidRequest` and nothing is stored.
@Suite struct ProtocolRangeTests {
    /// A cursor the container never gave out (beyond its newest version) is `400` on `changes`
    /// and `changes/wait`; the newest one, and older ones, are fine.
    @Test(arguments: ServerBackend.allCases) func aCursorNeverGivenOutIs400(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            #expect(try await fixture.commit(Sample.create(Sample.directory("a"))).status == 200)
            #expect(try await fixture.commit(Sample.create(Sample.directory("b"))).status == 200)
            for query in ["/changes?after=3", "/changes?after=999999", "/changes/wait?after=3&timeout=0"] {
                let reply = try await fixture.send(.GET, fixture.path(query))
                #expect(reply.status == 400, "\(query): \(reply.status) \(reply.text)")
                #expect(reply.code == .invalidRequest, "\(query)")
            }
            for query in ["/changes?after=2", "/changes?after=1", "/changes/wait?after=2&timeout=0"] {
                let reply = try await fixture.send(.GET, fixture.path(query))
                #expect(reply.status == 200, "\(query): \(reply.status) \(reply.text)")
            }
        }
    }

    /// `baseVersion` beyond 2^63 - 1 (a version no container can have) is `400`, not a `409`
    /// conflict; numbers JSON cannot fit in their fields are `400` too.
    @Test(arguments: ServerBackend.allCases) func numbersOutOfRangeAre400(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let request = Sample.create(Sample.directory("d"))
            let text = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
            let bodies = [
                text.replacingOccurrences(of: #""baseVersion":0"#, with: #""baseVersion":9223372036854775808"#),
                text.replacingOccurrences(of: #""baseVersion":0"#, with: #""baseVersion":18446744073709551615"#),
                text.replacingOccurrences(of: #""baseVersion":0"#, with: #""baseVersion":18446744073709551616"#),
                text.replacingOccurrences(of: #""baseVersion":0"#, with: #""baseVersion":-1"#),
                text.replacingOccurrences(of: #""mode":493"#, with: #""mode":4294967296"#),
                text.replacingOccurrences(of: #""mtime":1"#, with: #""mtime":9223372036854775808"#),
            ]
            for body in bodies {
                #expect(body != text)
                let reply = try await fixture.send(
                    .POST, fixture.path("/commits"), headers: [("Content-Type", "application/json")],
                    body: Array(body.utf8))
                #expect(reply.status == 400, "\(body): \(reply.status) \(reply.text)")
                #expect(reply.code == .invalidRequest)
            }
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.entry(request.id)
                } == nil)
        }
    }

    /// Names `.`, `..`, empty, containing `/` or NUL, and 256 bytes long are `400`; nothing is
    /// stored (the feed stays empty). 255 bytes is fine.
    @Test(arguments: ServerBackend.allCases) func badNamesAre400AndNothingIsStored(backend: ServerBackend) async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let names: [[UInt8]] = [
                Array(".".utf8), Array("..".utf8), [], Array("a/b".utf8), Array("/".utf8), [0x61, 0, 0x62], [0],
                Array(repeating: 0x61, count: 256),
            ]
            for name in names {
                var state = Sample.directory("x")
                state.name = name
                let reply = try await fixture.commit(Sample.create(state))
                #expect(reply.status == 400, "\(name): \(reply.status) \(reply.text)")
                #expect(reply.code == .invalidRequest)
            }
            let feed = try await fixture.send(.GET, fixture.path("/changes"))
            #expect(try feed.decode(ChangeBatch.self).entries.isEmpty)
            var longest = Sample.directory("x")
            longest.name = Array(repeating: 0x61, count: 255)
            #expect(try await fixture.commit(Sample.create(longest)).status == 200)
        }
    }
}
