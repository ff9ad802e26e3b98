import Foundation
import SQLiteSupport
import SyncBackend
import Testing

@testable import SyncFS

/// The one manifest codec: its bytes are fixed (doc/FORMATS.md), and the state database and the
/// container's databases each read what the other wrote.
@Suite("ManifestEncoding: one codec for state.db and container.db")
struct ManifestEncodingTests {
    static let manifest: [ChunkRef] = [
        ChunkRef(hash: ChunkHash(bytes: Array(0..<32))!, length: 0x0102_0304_0506_0708),
        ChunkRef(hash: ChunkHash(bytes: Array(repeating: 0xAB, count: 32))!, length: 1),
    ]

    /// The bytes as released: per chunk the 32 hash bytes, then the length, 8 bytes little-endian.
    static let released: [UInt8] =
        Array(0..<32) + [8, 7, 6, 5, 4, 3, 2, 1] + Array(repeating: 0xAB, count: 32) + [1, 0, 0, 0, 0, 0, 0, 0]

    @Test func theBytesAreTheReleasedOnes() {
        #expect(ManifestEncoding.encode(Self.manifest) == Self.released)
        #expect(ManifestEncoding.decode(Self.released) == Self.manifest)
        #expect(LocalEntryEncoding.encodeManifest(Self.manifest) == Self.released)
        #expect(LocalEntryEncoding.encodeManifest([]) == nil, "container.db stores an empty manifest as NULL")
        #expect(ManifestEncoding.encode([]) == [], "state.db stores an empty manifest as an empty blob")
    }

    @Test func damageIsRefusedWhole() throws {
        #expect(ManifestEncoding.decode(Array(Self.released.dropLast())) == nil)
        #expect(throws: ContainerProtocolError.self) {
            try LocalEntryEncoding.decodeManifest(Array(Self.released.prefix(39)))
        }
    }

    @Test func theContainerReadsWhatTheStateDatabaseWrote() throws {
        let database = try ScratchDatabase()
        let store = try MetadataStore(path: database.path)
        let id = FileID.random()
        store.record([.syncBaseSet(id, SyncBase(version: 3, manifest: Self.manifest))])
        try store.close()
        let rows = try database.connection().statement("SELECT manifest FROM sync_base")
        #expect(try rows.step())
        let stored = try #require(rows.bytes(0))
        #expect(stored == Self.released)
        #expect(try LocalEntryEncoding.decodeManifest(stored) == Self.manifest)
    }

    @Test func theStateDatabaseReadsWhatTheContainerWrote() throws {
        let database = try ScratchDatabase()
        try MetadataStore(path: database.path).close()
        let id = FileID.random()
        let statement = try database.connection().statement(
            "INSERT INTO sync_base (file_id, version, manifest) VALUES (?, 5, ?)")
        statement.bind(1, id.hex)
        statement.bind(2, bytes: LocalEntryEncoding.encodeManifest(Self.manifest))
        try statement.run()
        let store = try MetadataStore(path: database.path)
        defer { try? store.close() }
        #expect(try store.syncBase(of: id) == SyncBase(version: 5, manifest: Self.manifest))
    }
}
