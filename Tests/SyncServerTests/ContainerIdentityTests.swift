import Foundation
import NIOHTTP1
import SyncBackend
import SyncServer
import Testing

/// Which container a request reaches: always the one now at `ROOT/NAME` (a container replaced
/// behind the server's back is reopened, never written through its old database), and, when the
/// client says which one it expects (`SyncFS-Container-ID`), only that one.
@Suite struct ContainerIdentityTests {
    /// Moves `ROOT/NAME` aside to `ROOT/aside` and makes a new container at `ROOT/NAME`.
    static func replace(_ fixture: ServerFixture, aside: String) throws -> LocalContainer {
        let root = fixture.server.root
        try FileManager.default.moveItem(atPath: root + "/" + fixture.name, toPath: root + "/" + aside)
        return try LocalContainer.openOrCreate(at: root + "/" + fixture.name)
    }

    @Test func aReplacedContainerIsReopened() async throws {
        try await ServerFixture.run { fixture in
            let first = Sample.create(Sample.directory("before"))
            #expect(try await fixture.commit(first).status == 200)
            let old = try await fixture.send(.GET, fixture.path()).decode(ContainerInfo.self)
            // As an administrator restoring a backup: the old one moved aside, another put in place.
            let replacement = try Self.replace(fixture, aside: "aside")
            #expect(replacement.containerID != old.id)
            let info = try await fixture.send(.GET, fixture.path())
            #expect(info.status == 200)
            #expect(
                try info.decode(ContainerInfo.self)
                    == ContainerInfo(
                        id: replacement.containerID, name: fixture.name, features: WireProtocol.Feature.all,
                        access: .editor))
            let second = Sample.create(Sample.directory("after"))
            #expect(try await fixture.commit(second).status == 200)
            // The commit is in the container now at ROOT/NAME, not in the one moved aside.
            let now = try await fixture.container()
            let aside = try LocalContainer.openOrCreate(at: fixture.server.root + "/aside")
            #expect(aside.containerID == old.id)
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await now.entry(second.id) } != nil)
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await now.entry(first.id) } == nil)
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await aside.entry(second.id) } == nil)
            let feed = try await fixture.send(.GET, fixture.path("/changes")).decode(ChangeBatch.self)
            #expect(feed.entries.map(\.id) == [second.id])
        }
    }

    @Test func aContainerWhoseMarkerIsGoneIs404UntilItIsBack() async throws {
        try await ServerFixture.run { fixture in
            let old = try await fixture.send(.GET, fixture.path()).decode(ContainerInfo.self)
            let root = fixture.server.root
            try FileManager.default.moveItem(atPath: root + "/" + fixture.name, toPath: root + "/aside")
            for path in [fixture.path(), fixture.path("/changes")] {
                let reply = try await fixture.send(.GET, path)
                #expect(reply.status == 404, "\(path): \(reply.text)")
                #expect(reply.code == .notFound, "\(path)")
            }
            try FileManager.default.moveItem(atPath: root + "/aside", toPath: root + "/" + fixture.name)
            let back = try await fixture.send(.GET, fixture.path())
            #expect(try back.decode(ContainerInfo.self) == old)
        }
    }

    @Test(arguments: ServerBackend.allCases) func anotherContainerIDIs412AndStoresNothing(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let id = try await fixture.container().containerID
            let wrong = "00000000-0000-4000-8000-000000000000"
            let header = WireProtocol.containerIDHeader
            let chunk = Sample.chunk(Sample.bytes(3000, seed: 9))
            let request = Sample.create(Sample.directory("refused"))
            let body = Array(try JSONEncoder().encode(request))
            let replies = [
                try await fixture.send(.GET, fixture.path(), headers: [(header, wrong)]),
                try await fixture.send(.GET, fixture.path("/changes"), headers: [(header, wrong)]),
                try await fixture.send(
                    .PUT, fixture.path("/chunks/\(chunk.hash.hex)"),
                    headers: [
                        (header, wrong), (WireProtocol.chunkEncodingHeader, WireProtocol.encodingName(chunk.encoding)),
                        (WireProtocol.plainLengthHeader, String(chunk.plainLength)),
                    ], body: chunk.payload),
                try await fixture.send(
                    .POST, fixture.path("/commits"), headers: [(header, wrong), ("Content-Type", "application/json")],
                    body: body),
            ]
            for reply in replies {
                #expect(reply.status == 412, "\(reply.text)")
                #expect(reply.code == .containerMismatch)
                let message = reply.wireError?.message ?? ""
                #expect(message.contains(id) && message.contains(wrong), "\(message)")
            }
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.missingChunks([chunk.hash])
                }
                    == [chunk.hash])
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await container.entry(request.id) }
                    == nil)
            // The right ID is served; so is a request without the header; the header twice is 400.
            let right = try await fixture.send(
                .POST, fixture.path("/commits"), headers: [(header, id), ("Content-Type", "application/json")],
                body: body)
            #expect(right.status == 200, "\(right.text)")
            #expect(try await fixture.send(.GET, fixture.path(), headers: [(header, id)]).status == 200)
            #expect(try await fixture.send(.GET, fixture.path()).status == 200)
            let twice = try await fixture.send(.GET, fixture.path(), headers: [(header, id), (header, id)])
            #expect(twice.status == 400)
            #expect(twice.code == .invalidRequest)
        }
    }

    @Test(arguments: ServerBackend.allCases) func aClientOfTheReplacedContainerGets412(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let old = try await fixture.container().containerID
            let replacement = try await fixture.backend.replace(fixture.name, aside: "aside")
            #expect(replacement.containerID != old)
            let request = Sample.create(Sample.directory("late"))
            let body = Array(try JSONEncoder().encode(request))
            let reply = try await fixture.send(
                .POST, fixture.path("/commits"),
                headers: [(WireProtocol.containerIDHeader, old), ("Content-Type", "application/json")], body: body)
            #expect(reply.status == 412)
            #expect(reply.code == .containerMismatch)
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in try await replacement.entry(request.id) }
                    == nil)
        }
    }
}
