import Foundation
import SyncBackend
import SyncClient
import SyncServerTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncServer

/// `serve`'s bandwidth limits (`ServerBandwidth`): every chunk byte each way is charged to the
/// container's and the server's buckets before it is served, a chunk request the buckets do not
/// hold is refused with a short `Retry-After`, and the client's retry then gets it through —
/// nothing is lost, only delayed. The servers here count time on a clock that moves a quarter
/// second per chunk request, so what is refused does not depend on the machine's speed.
@Suite struct BandwidthLimitTests {
    /// `count` chunks of random (incompressible) content of `size` bytes each.
    static func chunks(_ count: Int, size: Int) -> [EncodedChunk] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in
            Sample.chunk((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
    }

    /// A clock that moves `step` at each reading: time passes per request, not per wall second.
    static func steppingClock(_ step: Duration = .milliseconds(250)) -> @Sendable () -> Duration {
        let clock = ManualClock()
        return {
            clock.advance(step)
            return clock.read()
        }
    }

    private func client(_ server: SyncTestServer, _ name: String) async throws -> HTTPContainer {
        let token = try server.makeContainer(name)
        let address = try ServerAddress(parsing: server.url(container: name))
        let info = try await HTTPContainer.fetchInfo(address: address, token: token)
        return try HTTPContainer(address: address, token: token, containerID: info.id)
    }

    /// A container limited to 32 KiB/s each way: after a 24 KiB chunk the bucket does not hold the
    /// next one, which is refused (`429`, `Retry-After`) and goes on the client's retry; the same
    /// on the way back. Every byte is counted and every chunk arrives intact.
    @Test func aContainersLimitCountsEveryChunkByteAndDelaysWithoutLosing() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        var limits = ServerBandwidthLimits()
        limits.perContainerUpload = BandwidthRate(bytesPerSecond: 32 << 10)
        limits.perContainerDownload = BandwidthRate(bytesPerSecond: 32 << 10)
        let server = try await SyncTestServer.start(
            root: root.path, bandwidth: limits, bandwidthClock: Self.steppingClock())
        var failure: (any Error)?
        do {
            let container = try await client(server, "box")
            let chunks = Self.chunks(3, size: 24 << 10)
            let total = Int64(chunks.reduce(0) { $0 + $1.payload.count })
            for chunk in chunks { try await container.putChunk(chunk) }
            var counts = try #require(server.bandwidthCounts)
            #expect(counts.uploaded == total, "every payload byte sent was counted")
            #expect(counts.refusals >= 1, "the second chunk came while the bucket did not hold it")
            #expect(try await container.missingChunks(chunks.map(\.hash)).isEmpty, "all stored")
            let refusedUploads = counts.refusals
            for chunk in chunks { #expect(try await container.chunk(chunk.hash).payload == chunk.payload) }
            counts = try #require(server.bandwidthCounts)
            #expect(counts.downloaded == total)
            #expect(counts.refusals > refusedUploads, "the download bucket refused too")
        } catch {
            failure = error
        }
        await server.stop()
        if let failure { throw failure }
    }

    /// The server's total limit is shared by all containers: one container's chunk leaves a
    /// bucket another container's chunk does not fit in (`503`, the server's refusal), which
    /// still goes through on the retry; a container of its own has no limit of its own here.
    @Test func theTotalLimitIsSharedByEveryContainer() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        var limits = ServerBandwidthLimits()
        limits.totalUpload = BandwidthRate(bytesPerSecond: 32 << 10)
        let server = try await SyncTestServer.start(
            root: root.path, bandwidth: limits, bandwidthClock: Self.steppingClock())
        var failure: (any Error)?
        do {
            let first = try await client(server, "one")
            let second = try await client(server, "two")
            let chunks = Self.chunks(2, size: 24 << 10)
            try await first.putChunk(chunks[0])
            #expect(server.bandwidthCounts?.refusals == 0)
            try await second.putChunk(chunks[1])
            let counts = try #require(server.bandwidthCounts)
            #expect(counts.refusals >= 1, "the other container met the server's used-up total")
            #expect(counts.uploaded == Int64(chunks.reduce(0) { $0 + $1.payload.count }))
            #expect(try await second.missingChunks([chunks[1].hash]).isEmpty)
        } catch {
            failure = error
        }
        await server.stop()
        if let failure { throw failure }
    }

    /// A refusal says when the bucket will hold the chunk, in whole seconds, but never more
    /// than `longestRetryAfter`: one refusal never outlasts a client's patience.
    @Test func aRefusalSaysWhenToComeBackWithinAFewSeconds() throws {
        var limits = ServerBandwidthLimits()
        limits.perContainerDownload = BandwidthRate(bytesPerSecond: 1024)
        let now = ManualClock()
        let bandwidth = ServerBandwidth(limits, clock: now.read)
        try bandwidth.admit(16 << 10 + 2 * 1024, .download, container: "box")  // a full burst, 2 s past it
        do {
            try bandwidth.admit(1024, .download, container: "box")
            Issue.record("admitted in debt")
        } catch {
            #expect(error.code == .tooManyRequests)
            #expect(error.response.headers[.retryAfter] == "3", "2 s of debt, 1 s for the chunk: \(error)")
        }
        do {
            try bandwidth.admit(16 << 10, .download, container: "box")
            Issue.record("admitted in debt")
        } catch {
            #expect(error.response.headers[.retryAfter] == String(ServerBandwidth.longestRetryAfter), "\(error)")
        }
        try bandwidth.admit(1 << 20, .upload, container: "box")  // the other direction is not limited
        try bandwidth.admit(1 << 20, .download, container: "other")  // nor another container
        now.advance(.seconds(3))
        try bandwidth.admit(1024, .download, container: "box")
        #expect(bandwidth.counts.downloadedBytes == Int64(16 << 10 + 3 * 1024 + (1 << 20)))
    }

    /// Concurrent requests cannot pass on one small credit: each is charged before it is served,
    /// so a burst of 64 KiB lets exactly four 16 KiB chunks go, however many ask at once.
    @Test func concurrentRequestsShareTheCreditNotMultiplyIt() {
        var limits = ServerBandwidthLimits()
        limits.totalUpload = BandwidthRate(bytesPerSecond: 64 << 10)
        let bandwidth = ServerBandwidth(limits, clock: ManualClock().read)
        let admitted = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            if (try? bandwidth.admitUpload(declaredLength: 16 << 10, largest: 1 << 24, container: "box")) != nil {
                admitted.withLock { $0 += 1 }
            }
        }
        #expect(admitted.withLock { $0 } == 4)
        #expect(bandwidth.counts.uploadedBytes == 64 << 10)
        #expect(throws: WireFailure.self, "a length is required") {
            try bandwidth.admitUpload(declaredLength: nil, largest: 1 << 24, container: "box")
        }
    }

    /// A hostile token holder of container X, asking for chunks as fast as it can, cannot keep
    /// container Y out: Y's refusal says a few seconds, the total is taken in turns (X, queued
    /// first, gets one, then Y's comes while X is refused), and Y is served when it comes back.
    @Test func aHostileContainerDoesNotStarveAnother() throws {
        var limits = ServerBandwidthLimits()
        limits.totalDownload = BandwidthRate(bytesPerSecond: 1 << 20)
        let now = ManualClock()
        let bandwidth = ServerBandwidth(limits, clock: now.read)
        var hostileAdmitted = 0
        for _ in 0..<100 where (try? bandwidth.admit(1 << 20, .download, container: "x")) != nil {
            hostileAdmitted += 1
        }
        #expect(hostileAdmitted == 1, "one chunk's worth of credit, one chunk")
        var retryAfter = 0
        do {
            try bandwidth.admit(256 << 10, .download, container: "y")
            Issue.record("admitted with the bucket empty")
        } catch {
            #expect(error.code == .unavailable)
            retryAfter = Int(error.response.headers[.retryAfter] ?? "") ?? 0
        }
        #expect((1...ServerBandwidth.longestRetryAfter).contains(retryAfter), "\(retryAfter)")
        // X keeps asking every 50 ms until Y comes back.
        var elapsed = Duration.zero
        while elapsed < .seconds(retryAfter) {
            now.advance(.milliseconds(50))
            elapsed += .milliseconds(50)
            if (try? bandwidth.admit(16 << 10, .download, container: "x")) != nil { hostileAdmitted += 1 }
        }
        #expect(hostileAdmitted <= 2, "X was queued first: one turn for it, then Y's")
        try bandwidth.admit(256 << 10, .download, container: "y")
    }
}

/// A clock a test moves.
final class ManualClock: Sendable {
    private let now = Mutex(Duration.zero)
    var read: @Sendable () -> Duration { { [self] in now.withLock { $0 } } }
    func advance(_ by: Duration) { now.withLock { $0 += by } }
}
