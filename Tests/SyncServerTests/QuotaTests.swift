import Foundation
import SyncBackend
import SyncClient
import SyncServer
import Testing

/// Storage quotas (`serve --quota`; doc/SEMANTICS.md "Quotas"): a chunk that would take its
/// container over the quota is refused `507 quotaExceeded` and nothing is stored; a chunk the
/// container holds already, a commit, and other containers are never refused; the client sees a
/// retryable error carrying the server's message (the mount keeps the change queued).
@Suite("Storage quotas")
struct QuotaTests {
    static let quota: Int64 = 100 * 1024

    /// Random (incompressible) chunks of 30 KiB: three fit in the quota, a fourth does not.
    private static func chunks(_ count: Int, seed: UInt8) -> [EncodedChunk] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { index in
            let bytes = (0..<(30 * 1024)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            return Sample.chunk(bytes + [seed, UInt8(index)])
        }
    }

    @Test(arguments: ServerBackend.allCases) func aChunkOverTheQuotaIsRefusedAndNothingElseIs(backend: ServerBackend)
        async throws
    {
        try await ServerFixture.run(
            backend: backend, quotas: QuotaSettings(perContainer: ["box": Self.quota])
        ) { fixture in
            let chunks = Self.chunks(4, seed: 1)
            for chunk in chunks.prefix(3) {
                let reply = try await fixture.put(chunk)
                #expect(reply.status == 204, "\(reply.text)")
            }
            let over = try await fixture.put(chunks[3])
            #expect(over.status == 507 && over.code == .quotaExceeded, "\(over.status) \(over.text)")
            #expect(over.wireError?.message.contains("over its quota") == true, "\(over.text)")
            let container = try await fixture.container()
            #expect(try await container.missingChunks([chunks[3].hash]) == [chunks[3].hash], "nothing stored")

            // Storing a held chunk again adds nothing: accepted.
            #expect(try await fixture.put(chunks[0]).status == 204)
            // A commit is never refused by the quota (its chunks are stored).
            let commit = try await fixture.commit(
                Sample.create(Sample.file("kept.bin", chunks: Array(chunks.prefix(3)))))
            #expect(commit.status == 200, "\(commit.text)")

            // The client: a retryable storage failure with the server's message.
            let address = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
            let client = try HTTPContainer(address: address, token: fixture.token, containerID: container.containerID)
            do throws(ContainerProtocolError) {
                try await client.putChunk(chunks[3])
                Issue.record("the client stored a chunk over the quota")
            } catch {
                #expect(error.isRetryable, "\(error)")
                #expect("\(error)".contains("over its quota"), "\(error)")
            }

            // Another container has no quota.
            let otherToken = try await fixture.makeContainer("free")
            let free = try HTTPContainer(
                address: try ServerAddress(parsing: fixture.server.url(container: "free")), token: otherToken,
                containerID: try await fixture.backend.container("free").containerID)
            for chunk in Self.chunks(5, seed: 2) { try await free.putChunk(chunk) }
        }
    }

    @Test func theCommandLineChecksQuotas() throws {
        for (arguments, message) in [
            (["--quota", "box"], "NAME=SIZE"),
            (["--quota", "box=lots"], "needs a size"),
            (["--quota", "../x=1G"], "NAME=SIZE"),
            (["--quota", "box=1G", "--quota", "box=2G"], "twice"),
            (["--default-quota", "50%"], "needs a size"),
        ] {
            let result = try Binary.run(["serve", "--root", "/tmp", "--listen", "127.0.0.1:0"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result)")
            #expect(result.stderr.contains(message), "\(arguments): \(result)")
        }
    }
}
