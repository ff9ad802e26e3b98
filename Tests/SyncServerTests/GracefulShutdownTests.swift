import AsyncHTTPClient
import Foundation
import NIOCore
import SyncBackend
import SyncServer
import Testing

/// A graceful stop ends pending long polls at once (`changed: false`) and lets requests in flight
/// finish.
@Suite struct GracefulShutdownTests {
    @Test func aPendingWaitAnswersPromptlyWhenTheServerStops() async throws {
        try await ServerFixture.run { fixture in
            let cursor = try await fixture.send(.GET, fixture.path("/changes")).decode(ChangeBatch.self).cursor
            let waiting = Task {
                try await fixture.send(.GET, fixture.path("/changes/wait?after=\(cursor.token)&timeout=25000"))
            }
            try await Task.sleep(for: .milliseconds(500))  // the wait is pending on the server
            let started = ContinuousClock.now
            let stopping = Task { await fixture.server.stop() }
            let reply = try await waiting.value
            let elapsed = ContinuousClock.now - started
            await stopping.value
            #expect(reply.status == 200)
            #expect(try reply.decode(WaitResponse.self) == WaitResponse(changed: false))
            #expect(elapsed < .seconds(2), "the wait answered \(elapsed) after the stop began")
        }
    }

    @Test func aChunkUploadInFlightCompletes() async throws {
        try await ServerFixture.run { fixture in
            let chunk = Sample.chunk(Sample.bytes(1 << 20, seed: 5))
            let (stream, feed) = AsyncStream<ByteBuffer>.makeStream()
            var request = HTTPClientRequest(url: fixture.server.baseURL + fixture.path("/chunks/\(chunk.hash.hex)"))
            request.method = .PUT
            request.headers.add(name: "Authorization", value: "Bearer \(fixture.token)")
            request.headers.add(
                name: WireProtocol.chunkEncodingHeader, value: WireProtocol.encodingName(chunk.encoding))
            request.headers.add(name: WireProtocol.plainLengthHeader, value: String(chunk.plainLength))
            request.body = .stream(stream, length: .known(Int64(chunk.payload.count)))
            let upload = Task { [client = fixture.client] in
                try await ServerFixture.execute(client, request, timeout: .seconds(30))
            }
            let half = chunk.payload.count / 2
            feed.yield(ByteBuffer(bytes: chunk.payload.prefix(half)))
            try await Task.sleep(for: .milliseconds(300))  // the request is on the server, half read
            let stopping = Task { await fixture.server.stop() }
            try await Task.sleep(for: .milliseconds(300))
            feed.yield(ByteBuffer(bytes: chunk.payload.dropFirst(half)))
            feed.finish()
            let reply = try await upload.value
            await stopping.value
            #expect(reply.status == 204, "\(reply.text)")
            let container = try fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.missingChunks([chunk.hash])
                }
                .isEmpty)
            // Stopped: new requests find no server.
            await #expect(throws: (any Error).self) { _ = try await fixture.send(.GET, fixture.path()) }
        }
    }
}
