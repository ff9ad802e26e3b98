/// A page of the change feed (`ChangeBatch`) as bytes: the answer to `GET .../changes` when the
/// request's `Accept` names `ChangePageFormat.mediaType` (doc/PROTOCOL.md "Change pages in
/// binary"). The JSON form spends most of a first attach's decoding on names as arrays of numbers
/// and hashes as hex; this form is a third of the bytes and decodes about forty times faster.
///
/// All integers unsigned big-endian unless said otherwise; `N` bytes after each count:
///
///     4 bytes   magic "SFCP", then 1 byte the format's version (1)
///     1 byte    moreComing: 0 or 1
///     4+N       the cursor's token (UTF-8)
///     4 bytes   the number of entries, then each entry:
///       16        id
///       8         version
///       1         flags: 1 deleted, 2 has a parent, 4 has a symlink target (other bits 0)
///       2+N       device (UTF-8)
///       16        parent (if flagged)
///       2+N       name
///       1         kind (`NodeKind`'s raw value)
///       4         mode
///       8         mtime (two's complement)
///       8         size (two's complement)
///       4+N       symlink target (if flagged)
///       4         the number of extended attributes, then each: 2+N name (UTF-8), 4+N value
///       4         the number of chunks, then each: 32 hash, 8 length (two's complement)
///
/// Nothing follows the last entry. Decoding checks the framing only (every count against the
/// bytes left, so what it allocates is a small multiple of the body, as the JSON decoder's; flags,
/// kind, UTF-8, no repeated attribute name, no trailing bytes); what the entries say is the
/// validating layer's business, as for the JSON form.
public enum ChangePageFormat {
    /// The media type a client names in `Accept`, and the server's answer in `Content-Type`.
    public static let mediaType = "application/vnd.syncfs.change-page"
    public static let version: UInt8 = 1
    static let magic: [UInt8] = Array("SFCP".utf8)

    /// An entry without parent, device, name, target, attributes or chunks.
    static let minimumEntryBytes = 16 + 8 + 1 + 2 + 2 + 1 + 4 + 8 + 8 + 4 + 4

    static let deletedFlag: UInt8 = 1
    static let parentFlag: UInt8 = 2
    static let targetFlag: UInt8 = 4

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// A field too long for its count (cannot happen for entries that follow the protocol's
        /// rules); the server answers in JSON instead.
        case unencodable(String)
        case malformed(String)

        public var description: String {
            switch self {
            case .unencodable(let what): return "cannot encode a change page in binary: \(what)"
            case .malformed(let what): return "a binary change page is malformed: \(what)"
            }
        }
    }

    /// Whether an `Accept` header's value names the binary form (one of its comma-separated media
    /// ranges is `mediaType`, in any case, with any parameters but `q=0`).
    public static func isAccepted(by accept: String) -> Bool {
        accept.lowercased().split(separator: ",").contains { range in
            let parts = range.split(separator: ";").map { $0.filter { $0 != " " && $0 != "\t" } }
            guard parts.first == mediaType else { return false }
            return !parts.dropFirst().contains { $0.hasPrefix("q=") && Double($0.dropFirst(2)) == 0 }
        }
    }

    // MARK: Encoding

    /// The page's bytes.
    public static func encode(_ batch: ChangeBatch) throws(Failure) -> [UInt8] {
        var writer = ByteWriter(capacity: envelopeBytes(batch) + batch.entries.reduce(0) { $0 + encodedBytes(of: $1) })
        writer.append(magic)
        writer.append(version)
        writer.append(batch.moreComing ? 1 : 0)
        try writer.counted32(Array(batch.cursor.token.utf8), "the cursor")
        try writer.append32(batch.entries.count, "the number of entries")
        for entry in batch.entries { try append(entry, to: &writer) }
        return writer.bytes
    }

    /// The exact size of `entry` in a page.
    public static func encodedBytes(of entry: RemoteEntry) -> Int {
        let state = entry.state
        var total = minimumEntryBytes + entry.device.utf8.count + state.name.count
        if state.parent != nil { total += 16 }
        if let target = state.symlinkTarget { total += 4 + target.count }
        for (name, value) in state.xattrs { total += 2 + name.utf8.count + 4 + value.count }
        return total + 40 * state.manifest.count
    }

    /// The size of the page without its entries.
    public static func envelopeBytes(_ batch: ChangeBatch) -> Int { 4 + 1 + 1 + 4 + batch.cursor.token.utf8.count + 4 }

    private static func append(_ entry: RemoteEntry, to writer: inout ByteWriter) throws(Failure) {
        let state = entry.state
        writer.append(entry.id)
        writer.append64(entry.version)
        var flags: UInt8 = entry.isDeleted ? deletedFlag : 0
        if state.parent != nil { flags |= parentFlag }
        if state.symlinkTarget != nil { flags |= targetFlag }
        writer.append(flags)
        try writer.counted16(Array(entry.device.utf8), "a device")
        if let parent = state.parent { writer.append(parent) }
        try writer.counted16(state.name, "a name")
        writer.append(UInt8(truncatingIfNeeded: state.kind.rawValue))
        writer.append32(state.mode)
        writer.append64(UInt64(bitPattern: state.mtime))
        writer.append64(UInt64(bitPattern: state.size))
        if let target = state.symlinkTarget { try writer.counted32(target, "a symlink target") }
        try writer.append32(state.xattrs.count, "the number of extended attributes")
        for (name, value) in state.xattrs {
            try writer.counted16(Array(name.utf8), "an extended attribute's name")
            try writer.counted32(value, "an extended attribute's value")
        }
        try writer.append32(state.manifest.count, "the number of chunks")
        for chunk in state.manifest {
            writer.append(chunk.hash.bytes)
            writer.append64(UInt64(bitPattern: chunk.length))
        }
    }

    // MARK: Decoding

    /// The page `bytes` hold, or `malformed` saying what is wrong and where.
    public static func decode(_ bytes: [UInt8]) throws(Failure) -> ChangeBatch {
        try bytes.withUnsafeBufferPointer { (buffer) throws(Failure) -> ChangeBatch in
            var reader = ByteReader(buffer)
            guard try reader.bytes(4, "the magic").elementsEqual(magic) else {
                throw .malformed("the magic is not \"SFCP\"")
            }
            let pageVersion = try reader.byte("the version")
            guard pageVersion == version else { throw .malformed("version \(pageVersion), not \(version)") }
            let moreComing = try reader.flag("moreComing")
            let cursor = try reader.text(reader.count32("the cursor"), "the cursor")
            let count = try reader.count32("the number of entries", elementBytes: minimumEntryBytes)
            var entries: [RemoteEntry] = []
            entries.reserveCapacity(count)
            for index in 0..<count {
                do throws(Failure) {
                    entries.append(try decodeEntry(&reader))
                } catch .malformed(let what) {
                    throw .malformed("entry \(index): \(what)")
                }
            }
            guard reader.isAtEnd else { throw .malformed("\(reader.left) bytes after the last entry") }
            return ChangeBatch(entries: entries, cursor: FeedCursor(token: cursor), moreComing: moreComing)
        }
    }

    private static func decodeEntry(_ reader: inout ByteReader) throws(Failure) -> RemoteEntry {
        let id = try reader.fileID("the id")
        let entryVersion = try reader.integer64("the version")
        let flags = try reader.byte("the flags")
        guard flags & ~(deletedFlag | parentFlag | targetFlag) == 0 else {
            throw .malformed("unknown flags \(flags)")
        }
        let device = try reader.text(reader.count16("the device"), "the device")
        let parent = flags & parentFlag != 0 ? try reader.fileID("the parent") : nil
        let name = Array(try reader.bytes(reader.count16("the name"), "the name"))
        let kindByte = try reader.byte("the kind")
        guard let kind = NodeKind(rawValue: Int64(kindByte)) else { throw .malformed("unknown kind \(kindByte)") }
        let mode = try reader.integer32("the mode")
        let mtime = Int64(bitPattern: try reader.integer64("the mtime"))
        let size = Int64(bitPattern: try reader.integer64("the size"))
        let target =
            flags & targetFlag != 0
            ? Array(try reader.bytes(reader.count32("the symlink target"), "the symlink target")) : nil
        let attributeCount = try reader.count32("the number of extended attributes", elementBytes: 6)
        var xattrs: [String: [UInt8]] = [:]
        for _ in 0..<attributeCount {
            let attribute = try reader.text(reader.count16("an extended attribute's name"), "an attribute's name")
            let value = Array(try reader.bytes(reader.count32("an attribute's value"), "an attribute's value"))
            guard xattrs.updateValue(value, forKey: attribute) == nil else {
                throw .malformed("the extended attribute \(attribute) twice")
            }
        }
        let chunkCount = try reader.count32("the number of chunks", elementBytes: 40)
        var manifest: [ChunkRef] = []
        manifest.reserveCapacity(chunkCount)
        for _ in 0..<chunkCount {
            guard let hash = ChunkHash(bytes: Array(try reader.bytes(32, "a chunk's hash"))) else {
                throw .malformed("a chunk's hash")
            }
            manifest.append(ChunkRef(hash: hash, length: Int64(bitPattern: try reader.integer64("a chunk's length"))))
        }
        let state = EntryState(
            parent: parent, name: name, kind: kind, mode: mode, mtime: mtime, size: size, xattrs: xattrs,
            symlinkTarget: target, manifest: manifest)
        return RemoteEntry(
            id: id, version: entryVersion, isDeleted: flags & deletedFlag != 0, device: device, state: state)
    }
}

/// Appends big-endian fields to a byte array.
private struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func append(_ byte: UInt8) { bytes.append(byte) }
    mutating func append(_ more: [UInt8]) { bytes.append(contentsOf: more) }

    mutating func append(_ id: FileID) {
        append64(id.high)
        append64(id.low)
    }

    mutating func append64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    mutating func append32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    mutating func append32(_ count: Int, _ what: String) throws(ChangePageFormat.Failure) {
        guard let value = UInt32(exactly: count) else { throw .unencodable("\(what) is \(count)") }
        append32(value)
    }

    mutating func counted32(_ field: [UInt8], _ what: String) throws(ChangePageFormat.Failure) {
        try append32(field.count, what)
        append(field)
    }

    mutating func counted16(_ field: [UInt8], _ what: String) throws(ChangePageFormat.Failure) {
        guard let count = UInt16(exactly: field.count) else { throw .unencodable("\(what) has \(field.count) bytes") }
        bytes.append(UInt8(truncatingIfNeeded: count >> 8))
        bytes.append(UInt8(truncatingIfNeeded: count))
        append(field)
    }
}

/// Reads big-endian fields from a buffer, never past its end.
private struct ByteReader {
    private let buffer: UnsafeBufferPointer<UInt8>
    private var offset = 0

    init(_ buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

    var left: Int { buffer.count - offset }
    var isAtEnd: Bool { offset == buffer.count }

    mutating func bytes(_ count: Int, _ what: String) throws(ChangePageFormat.Failure) -> UnsafeBufferPointer<UInt8> {
        guard count <= left else {
            throw .malformed("\(what) needs \(count) bytes at offset \(offset); \(left) are left")
        }
        defer { offset += count }
        return UnsafeBufferPointer(rebasing: buffer[offset..<offset + count])
    }

    mutating func byte(_ what: String) throws(ChangePageFormat.Failure) -> UInt8 {
        try bytes(1, what)[0]
    }

    mutating func flag(_ what: String) throws(ChangePageFormat.Failure) -> Bool {
        let value = try byte(what)
        guard value <= 1 else { throw .malformed("\(what) is \(value), not 0 or 1") }
        return value == 1
    }

    mutating func integer64(_ what: String) throws(ChangePageFormat.Failure) -> UInt64 {
        try bytes(8, what).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func integer32(_ what: String) throws(ChangePageFormat.Failure) -> UInt32 {
        try bytes(4, what).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func count16(_ what: String) throws(ChangePageFormat.Failure) -> Int {
        Int(try bytes(2, what).reduce(0) { $0 << 8 | UInt16($1) })
    }

    /// A count of elements of at least `elementBytes` each, checked against the bytes left.
    mutating func count32(_ what: String, elementBytes: Int = 1) throws(ChangePageFormat.Failure) -> Int {
        let count = Int(try integer32(what))
        guard count <= left / elementBytes else {
            throw .malformed("\(what) is \(count); \(left) bytes cannot hold that many")
        }
        return count
    }

    mutating func fileID(_ what: String) throws(ChangePageFormat.Failure) -> FileID {
        FileID(high: try integer64(what), low: try integer64(what))
    }

    mutating func text(_ count: Int, _ what: String) throws(ChangePageFormat.Failure) -> String {
        let field = try bytes(count, what)
        guard let text = String(validating: field, as: UTF8.self) else { throw .malformed("\(what) is not UTF-8") }
        return text
    }
}
