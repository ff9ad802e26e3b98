import Foundation
import TestSupport
import Testing

@testable import SyncBackend

/// The `ChunkBlobStore` contract on a local directory (the chunk bytes of a PostgreSQL store
/// without S3).
struct LocalChunkBlobStoreTests {
    @Test func putGetDeleteAndIdempotence() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LocalChunkBlobStore.create(at: directory + "/blobs")
        let chunk = rawChunk("blob bytes")
        await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) { try await store.get(chunk.hash) }
        try await store.put(chunk)
        try await store.put(chunk)
        #expect(try await store.get(chunk.hash) == chunk)
        try await store.delete(chunk.hash)
        try await store.delete(chunk.hash)
        await #expect(throws: ContainerProtocolError.chunkNotFound(chunk.hash)) { try await store.get(chunk.hash) }
        var info = stat()
        #expect(stat(directory + "/blobs", &info) == 0 && info.st_mode & 0o777 == 0o700)
    }

    @Test func aDirectoryWithoutItsMarkerIsUnavailableNeverEmpty() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try LocalChunkBlobStore.create(at: directory + "/blobs")
        let chunk = rawChunk("kept")
        try await store.put(chunk)
        try FileManager.default.removeItem(atPath: directory + "/blobs/" + LocalChunkBlobStore.markerName)
        let read = await protocolError { _ = try await store.get(chunk.hash) }
        #expect(read?.isUnavailable == true)
        let write = await protocolError { try await store.put(rawChunk("new")) }
        #expect(write?.isUnavailable == true)
        #expect(throws: ContainerProtocolError.self) { try LocalChunkBlobStore(at: directory + "/blobs") }
    }
}
