import AsyncHTTPClient
import Foundation
import NIOCore
import SyncBackend
import SyncServer
import TestSupport
import Testing

/// A graceful stop ends pending long polls at once (`changed: false`) and lets requests in flight
/// finish. The tests wait for the server's own state (a wait pending, an upload being read, the
/// listener closed), never for a guessed time.
@Suite struct GracefulShutdownTests {
    @Test(arguments: ServerBackend.allCases) func aPendingWaitAnswersPromptlyWhenTheServerStops(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(backend: backend) { fixture in
            let cursor = try await fixture.send(.GET, fixture.path("/changes")).decode(ChangeBatch.self).cursor
            let waiting = Task {
                try await fixture.send(.GET, fixture.path("/changes/wait?after=\(cursor.token)&timeout=25000"))
            }
            try await fixture.server.waitUntil("the wait is pending") { $0.pendingChangeWaits == 1 }
            let started = ContinuousClock.now
            let stopping = Task { await fixture.server.stop() }
            let reply = try await waiting.value
            let elapsed = ContinuousClock.now - started
            await stopping.value
            #expect(reply.status == 200)
            #expect(try reply.decode(WaitResponse.self) == WaitResponse(changed: false))
            // Far under the 25 s the wait asked for and the 30 s a stop grants requests in flight.
            #expect(elapsed < .seconds(5), "the wait answered \(elapsed) after the stop began")
            #expect(fixture.server.pendingChangeWaits == 0)
        }
    }

    @Test(arguments: ServerBackend.allCases) func aChunkUploadInFlightCompletes(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let chunk = Sample.chunk(Sample.bytes(1 << 20, seed: 5))
            let (upload, feed) = fixture.streamingPut(chunk)
            let half = chunk.payload.count / 2
            feed.yield(ByteBuffer(bytes: chunk.payload.prefix(half)))
            // The request is on the server, its body being read.
            try await fixture.server.waitUntil("the upload is in progress") { $0.chunkUploadsInProgress == 1 }
            let stopping = Task { await fixture.server.stop() }
            // The stop has begun: the listener is closed, the upload still in progress.
            try await fixture.server.waitUntil("the server refuses connections") { _ in
                !fixture.acceptsConnections()
            }
            #expect(fixture.server.isStopping)
            #expect(fixture.server.chunkUploadsInProgress == 1)
            feed.yield(ByteBuffer(bytes: chunk.payload.dropFirst(half)))
            feed.finish()
            let reply = try await upload.value
            await stopping.value
            #expect(reply.status == 204, "\(reply.text)")
            let container = try await fixture.container()
            #expect(
                try await onDisk { () async throws(ContainerProtocolError) in
                    try await container.missingChunks([chunk.hash])
                }
                .isEmpty)
            // Stopped: new connections find no server.
            #expect(!fixture.acceptsConnections())
        }
    }
}
