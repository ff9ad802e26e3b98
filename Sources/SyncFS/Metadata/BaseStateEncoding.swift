import SyncBackend

/// The stored form of a sync base's entry state (everything but the manifest, which
/// `sync_base.manifest` holds): a compact binary record, cheap enough to write for every entry a
/// mount attaches.
///
/// Layout (integers little-endian): version byte `1`; parent flag (0/1) + 16 bytes of file ID;
/// kind (1 byte); mode (4); mtime (8); size (8); name (2-byte length + bytes); symlink target
/// flag (0/1) + 2-byte length + bytes; xattr count (2); per xattr: name (2-byte length + UTF-8),
/// value (4-byte length + bytes). Anything that does not decode is treated as "base unknown".
enum BaseStateEncoding {
    static func encode(_ state: EntryState) -> [UInt8] {
        var bytes: [UInt8] = [1]
        bytes.reserveCapacity(48 + state.name.count)
        if let parent = state.parent {
            bytes.append(1)
            append(parent.high, 8, to: &bytes)
            append(parent.low, 8, to: &bytes)
        } else {
            bytes.append(0)
        }
        bytes.append(UInt8(truncatingIfNeeded: state.kind.rawValue))
        append(UInt64(state.mode), 4, to: &bytes)
        append(UInt64(bitPattern: state.mtime), 8, to: &bytes)
        append(UInt64(bitPattern: state.size), 8, to: &bytes)
        append(UInt64(state.name.count), 2, to: &bytes)
        bytes.append(contentsOf: state.name)
        if let target = state.symlinkTarget {
            bytes.append(1)
            append(UInt64(target.count), 2, to: &bytes)
            bytes.append(contentsOf: target)
        } else {
            bytes.append(0)
        }
        append(UInt64(state.xattrs.count), 2, to: &bytes)
        for (name, value) in state.xattrs.sorted(by: { $0.key < $1.key }) {
            append(UInt64(name.utf8.count), 2, to: &bytes)
            bytes.append(contentsOf: name.utf8)
            append(UInt64(value.count), 4, to: &bytes)
            bytes.append(contentsOf: value)
        }
        return bytes
    }

    /// The state (with an empty manifest), or nil if `bytes` is not a record of this layout.
    static func decode(_ bytes: [UInt8]) -> EntryState? {
        var reader = Reader(bytes: bytes)
        guard reader.byte() == 1, let hasParent = reader.byte() else { return nil }
        var parent: FileID?
        if hasParent == 1 {
            guard let high = reader.integer(8), let low = reader.integer(8) else { return nil }
            parent = FileID(high: high, low: low)
        }
        guard let kindByte = reader.byte(), let kind = NodeKind(rawValue: Int64(kindByte)),
            let mode = reader.integer(4), let mtime = reader.integer(8), let size = reader.integer(8),
            let nameLength = reader.integer(2), let name = reader.take(Int(nameLength)),
            let hasTarget = reader.byte()
        else { return nil }
        var target: [UInt8]?
        if hasTarget == 1 {
            guard let length = reader.integer(2), let bytes = reader.take(Int(length)) else { return nil }
            target = bytes
        }
        guard let count = reader.integer(2) else { return nil }
        var xattrs: [String: [UInt8]] = [:]
        for _ in 0..<count {
            guard let nameLength = reader.integer(2), let nameBytes = reader.take(Int(nameLength)),
                let valueLength = reader.integer(4), let value = reader.take(Int(valueLength))
            else { return nil }
            xattrs[String(decoding: nameBytes, as: UTF8.self)] = value
        }
        guard reader.isAtEnd else { return nil }
        return EntryState(
            parent: parent, name: name, kind: kind, mode: UInt32(mode), mtime: Int64(bitPattern: mtime),
            size: Int64(bitPattern: size), xattrs: xattrs, symlinkTarget: target)
    }

    private static func append(_ value: UInt64, _ count: Int, to bytes: inout [UInt8]) {
        for index in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        mutating func byte() -> UInt8? { take(1)?.first }

        mutating func integer(_ count: Int) -> UInt64? {
            guard let part = take(count) else { return nil }
            var value: UInt64 = 0
            for (index, byte) in part.enumerated() { value |= UInt64(byte) << (8 * UInt64(index)) }
            return value
        }

        mutating func take(_ count: Int) -> [UInt8]? {
            guard count >= 0, offset + count <= bytes.count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<offset + count])
        }
    }
}
