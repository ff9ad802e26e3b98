/// The one stored form of a manifest, shared by every database that keeps one: `container.db`'s
/// and PostgreSQL's `manifest` columns (`LocalEntryEncoding`, which stores an empty manifest as
/// NULL) and the state database's `sync_base.manifest` (doc/FORMATS.md).
///
/// One 40-byte record per chunk, in file order: the 32 hash bytes, then the plain length as an
/// unsigned 64-bit little-endian integer. Lengths are kept as bit patterns both ways: lossless,
/// and a length that is not positive (validation refuses such manifests before they are stored)
/// can never trap the process that encodes it.
package enum ManifestEncoding {
    /// The size of one chunk's record.
    package static let recordSize = 40

    /// The bytes of `manifest` (empty for an empty manifest).
    package static func encode(_ manifest: [ChunkRef]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(manifest.count * recordSize)
        for piece in manifest {
            bytes.append(contentsOf: piece.hash.bytes)
            let length = UInt64(bitPattern: piece.length)
            for index in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: length >> (8 * UInt64(index)))) }
        }
        return bytes
    }

    /// The manifest `bytes` hold, or nil if they are not whole records (damage): never half-read.
    package static func decode(_ bytes: [UInt8]) -> [ChunkRef]? {
        guard bytes.count % recordSize == 0 else { return nil }
        var manifest: [ChunkRef] = []
        manifest.reserveCapacity(bytes.count / recordSize)
        for start in stride(from: 0, to: bytes.count, by: recordSize) {
            guard let hash = ChunkHash(bytes: Array(bytes[start..<start + 32])) else { return nil }
            var length: UInt64 = 0
            for index in 0..<8 { length |= UInt64(bytes[start + 32 + index]) << (8 * UInt64(index)) }
            manifest.append(ChunkRef(hash: hash, length: Int64(bitPattern: length)))
        }
        return manifest
    }
}
