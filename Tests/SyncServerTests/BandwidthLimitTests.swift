import Foundation
import SyncBackend
import SyncClient
import SyncServerTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncServer

/// `serve`'s bandwidth limits (`ServerBandwidth`): every chunk byte each way is counted by the
/// container's and the server's buckets, a chunk request that comes while a bucket is in debt is
/// refused with `Retry-After` before its body is read, and the client's retry then gets it
/// through — nothing is lost, only delayed.
@Suite struct BandwidthLimitTests {
    /// `count` chunks of random (incompressible) content of `size` bytes each.
    static func chunks(_ count: Int, size: Int) -> [EncodedChunk] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in
            Sample.chunk((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
    }

    private func client(_ server: SyncTestServer, _ name: String) async throws -> HTTPContainer {
        let token = try server.makeContainer(name)
        let address = try ServerAddress(parsing: server.url(container: name))
        let info = try await HTTPContainer.fetchInfo(address: address, token: token)
        return try HTTPContainer(address: address, token: token, containerID: info.id)
    }

    /// A container limited to 32 KiB/s each way: three 24 KiB chunks pass the burst after the
    /// second, so the third is refused once (`429`, `Retry-After`) and goes on the client's retry;
    /// the same on the way back. Every byte is counted and every chunk arrives intact.
    @Test func aContainersLimitCountsEveryChunkByteAndDelaysWithoutLosing() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        var limits = ServerBandwidthLimits()
        limits.perContainerUpload = BandwidthRate(bytesPerSecond: 32 << 10)
        limits.perContainerDownload = BandwidthRate(bytesPerSecond: 32 << 10)
        let server = try await SyncTestServer.start(root: root.path, bandwidth: limits)
        var failure: (any Error)?
        do {
            let container = try await client(server, "box")
            let chunks = Self.chunks(3, size: 24 << 10)
            let total = Int64(chunks.reduce(0) { $0 + $1.payload.count })
            for chunk in chunks { try await container.putChunk(chunk) }
            var counts = try #require(server.bandwidthCounts)
            #expect(counts.uploaded == total, "every payload byte sent was counted")
            #expect(counts.refusals >= 1, "the third chunk came while the bucket was in debt")
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

    /// The server's total limit is shared by all containers: one container's chunks leave a
    /// debt another container's request meets (`503`, the server's refusal), which still goes
    /// through on the retry; a container of its own has no limit of its own here.
    @Test func theTotalLimitIsSharedByEveryContainer() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        var limits = ServerBandwidthLimits()
        limits.totalUpload = BandwidthRate(bytesPerSecond: 32 << 10)
        let server = try await SyncTestServer.start(root: root.path, bandwidth: limits)
        var failure: (any Error)?
        do {
            let first = try await client(server, "one")
            let second = try await client(server, "two")
            let chunks = Self.chunks(3, size: 24 << 10)
            try await first.putChunk(chunks[0])
            try await first.putChunk(chunks[1])
            #expect(server.bandwidthCounts?.refusals == 0)
            try await second.putChunk(chunks[2])
            let counts = try #require(server.bandwidthCounts)
            #expect(counts.refusals >= 1, "the other container met the server's debt")
            #expect(counts.uploaded == Int64(chunks.reduce(0) { $0 + $1.payload.count }))
            #expect(try await second.missingChunks([chunks[2].hash]).isEmpty)
        } catch {
            failure = error
        }
        await server.stop()
        if let failure { throw failure }
    }

    /// The server answers a request met by the debt with the whole seconds until it is paid.
    @Test func aRefusalSaysWhenToComeBack() throws {
        var limits = ServerBandwidthLimits()
        limits.perContainerDownload = BandwidthRate(bytesPerSecond: 1024)
        let now = ManualClock()
        let bandwidth = ServerBandwidth(limits, clock: now.read)
        try bandwidth.admit(.download, container: "box")
        bandwidth.count(16 << 10 + 3 * 1024, .download, container: "box")  // 3 s of debt past the burst
        do {
            try bandwidth.admit(.download, container: "box")
            Issue.record("admitted in debt")
        } catch {
            #expect(error.code == .tooManyRequests)
            #expect(error.response.headers[.retryAfter] == "3", "\(error)")
        }
        try bandwidth.admit(.upload, container: "box")  // the other direction is not limited
        try bandwidth.admit(.download, container: "other")  // nor another container
        now.advance(.seconds(3))
        try bandwidth.admit(.download, container: "box")
    }
}

/// A clock a test moves.
final class ManualClock: Sendable {
    private let now = Mutex(Duration.zero)
    var read: @Sendable () -> Duration { { [self] in now.withLock { $0 } } }
    func advance(_ by: Duration) { now.withLock { $0 += by } }
}
