/// The compact BLOB encodings of `container.db`'s `manifest` and `xattrs` columns.
///
/// - manifest: `ManifestEncoding` (shared with the state database's `sync_base`); NULL when the
///   manifest is empty.
/// - xattrs: for each attribute, in ascending byte order of names: the name's UTF-8 length
///   (u32 LE), the name, the value's length (u32 LE), the value. NULL when there are none.
///
/// Decoding is strict: anything that does not parse whole is reported as a storage failure
/// (a damaged database), never half-read.
package enum LocalEntryEncoding {
    /// `ManifestEncoding`'s bytes, or NULL for an empty manifest.
    package static func encodeManifest(_ manifest: [ChunkRef]) -> [UInt8]? {
        manifest.isEmpty ? nil : ManifestEncoding.encode(manifest)
    }

    package static func decodeManifest(_ bytes: [UInt8]?) throws(ContainerProtocolError) -> [ChunkRef] {
        guard let bytes else { return [] }
        guard let manifest = ManifestEncoding.decode(bytes) else {
            throw .storageFailure("a stored manifest is damaged")
        }
        return manifest
    }

    package static func encodeXattrs(_ xattrs: [String: [UInt8]]) -> [UInt8]? {
        guard !xattrs.isEmpty else { return nil }
        var bytes: [UInt8] = []
        for (name, value) in xattrs.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }) {
            appendInteger(UInt64(name.utf8.count), bytes: 4, to: &bytes)
            bytes.append(contentsOf: name.utf8)
            appendInteger(UInt64(value.count), bytes: 4, to: &bytes)
            bytes.append(contentsOf: value)
        }
        return bytes
    }

    package static func decodeXattrs(_ bytes: [UInt8]?) throws(ContainerProtocolError) -> [String: [UInt8]] {
        guard let bytes else { return [:] }
        var xattrs: [String: [UInt8]] = [:]
        var offset = 0
        func field() throws(ContainerProtocolError) -> [UInt8] {
            guard bytes.count - offset >= 4 else { throw .storageFailure("stored extended attributes are damaged") }
            let length = Int(readInteger(bytes, at: offset, bytes: 4))
            offset += 4
            guard bytes.count - offset >= length else {
                throw .storageFailure("stored extended attributes are damaged")
            }
            defer { offset += length }
            return Array(bytes[offset..<offset + length])
        }
        while offset < bytes.count {
            let name = String(decoding: try field(), as: UTF8.self)
            xattrs[name] = try field()
        }
        return xattrs
    }

    private static func appendInteger(_ value: UInt64, bytes count: Int, to bytes: inout [UInt8]) {
        for index in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    private static func readInteger(_ bytes: [UInt8], at offset: Int, bytes count: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in (0..<count).reversed() { value = value << 8 | UInt64(bytes[offset + index]) }
        return value
    }
}
