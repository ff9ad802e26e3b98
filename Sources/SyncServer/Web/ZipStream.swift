import CZlib

/// A zip archive written as a stream (PKWARE APPNOTE 6.3.10): each file stored (not
/// compressed) between its local header and a data descriptor with its CRC-32, the central
/// directory at the end; ZIP64 fields where a size, an offset or the entry count needs them.
///
/// Contract: the bytes handed out, in order, are a valid archive once `end` was called; names
/// are written as given (the caller makes them relative, `/`-separated), flagged UTF-8 when they
/// are; `add…` calls must not interleave (one file at a time).
struct ZipStream {
    private var offset: UInt64 = 0
    private var central: [UInt8] = []
    private var count: UInt64 = 0
    private var open: (name: [UInt8], start: UInt64, time: (UInt16, UInt16), crc: UInt32, size: UInt64)?

    /// The local header of a file of `size` bytes modified at `seconds` (Unix).
    mutating func beginFile(_ name: [UInt8], size: UInt64, modified seconds: Int64) -> [UInt8] {
        precondition(open == nil, "one file at a time")
        let time = Self.dosTime(seconds)
        let large = size >= 0xFFFF_FFFF
        var header = Writer()
        header.u32(0x0403_4B50)
        header.u16(large ? 45 : 20)
        header.u16(Self.flags(name))
        header.u16(0)  // stored
        header.u16(time.0)
        header.u16(time.1)
        header.u32(0)  // CRC-32, sizes: in the data descriptor
        header.u32(large ? 0xFFFF_FFFF : 0)
        header.u32(large ? 0xFFFF_FFFF : 0)
        header.u16(UInt16(name.count))
        header.u16(large ? 20 : 0)
        header.bytes(name)
        if large {
            header.u16(1)
            header.u16(16)
            header.u64(0)
            header.u64(0)
        }
        open = (name, offset, time, 0, 0)
        offset += UInt64(header.data.count)
        return header.data
    }

    /// Counts `bytes` of the open file (the caller sends them as they are).
    mutating func content(_ bytes: [UInt8]) {
        guard var file = open else { preconditionFailure("no file is open") }
        file.crc = bytes.withUnsafeBufferPointer { buffer in
            UInt32(crc32(uLong(file.crc), buffer.baseAddress, uInt(buffer.count)))
        }
        file.size += UInt64(bytes.count)
        open = file
        offset += UInt64(bytes.count)
    }

    /// The data descriptor of the open file, whose central directory record is kept for `end`.
    mutating func endFile() -> [UInt8] {
        guard let file = open else { preconditionFailure("no file is open") }
        open = nil
        let large = file.size >= 0xFFFF_FFFF
        var descriptor = Writer()
        descriptor.u32(0x0807_4B50)
        descriptor.u32(file.crc)
        if large {
            descriptor.u64(file.size)
            descriptor.u64(file.size)
        } else {
            descriptor.u32(UInt32(file.size))
            descriptor.u32(UInt32(file.size))
        }
        offset += UInt64(descriptor.data.count)
        record(file.name, crc: file.crc, size: file.size, start: file.start, time: file.time, external: 0o100644 << 16)
        return descriptor.data
    }

    /// A folder's entry (`name` ends with `/`).
    mutating func folder(_ name: [UInt8], modified seconds: Int64) -> [UInt8] {
        let bytes = beginFile(name, size: 0, modified: seconds)
        guard let file = open else { preconditionFailure("a file was just opened") }
        open = nil
        record(name, crc: 0, size: 0, start: file.start, time: file.time, external: (0o040755 << 16) | 0x10)
        // A folder has no data descriptor: its header said sizes of 0 and the flag is cleared below.
        var fixed = bytes
        fixed[6] &= ~0x08
        return fixed
    }

    /// The central directory and its end records.
    mutating func end() -> [UInt8] {
        let start = offset
        let size = UInt64(central.count)
        var tail = Writer()
        tail.bytes(central)
        let large = count >= 0xFFFF || start >= 0xFFFF_FFFF || size >= 0xFFFF_FFFF
        if large {
            let record = start + size
            tail.u32(0x0606_4B50)
            tail.u64(44)
            tail.u16(45)
            tail.u16(45)
            tail.u32(0)
            tail.u32(0)
            tail.u64(count)
            tail.u64(count)
            tail.u64(size)
            tail.u64(start)
            tail.u32(0x0706_4B50)
            tail.u32(0)
            tail.u64(record)
            tail.u32(1)
        }
        tail.u32(0x0605_4B50)
        tail.u16(0)
        tail.u16(0)
        tail.u16(large ? 0xFFFF : UInt16(count))
        tail.u16(large ? 0xFFFF : UInt16(count))
        tail.u32(large ? 0xFFFF_FFFF : UInt32(size))
        tail.u32(large ? 0xFFFF_FFFF : UInt32(start))
        tail.u16(0)
        offset += UInt64(tail.data.count)
        central = []
        return tail.data
    }

    private mutating func record(
        _ name: [UInt8], crc: UInt32, size: UInt64, start: UInt64, time: (UInt16, UInt16), external: UInt32
    ) {
        let isFolder = name.last == UInt8(ascii: "/")
        var extra = Writer()
        if size >= 0xFFFF_FFFF {
            extra.u64(size)
            extra.u64(size)
        }
        if start >= 0xFFFF_FFFF { extra.u64(start) }
        var entry = Writer()
        entry.u32(0x0201_4B50)
        entry.u16((3 << 8) | 45)  // made by: Unix
        entry.u16(extra.data.isEmpty ? 20 : 45)
        entry.u16(Self.flags(name) & (isFolder ? ~0x08 : 0xFFFF))
        entry.u16(0)
        entry.u16(time.0)
        entry.u16(time.1)
        entry.u32(crc)
        entry.u32(size >= 0xFFFF_FFFF ? 0xFFFF_FFFF : UInt32(size))
        entry.u32(size >= 0xFFFF_FFFF ? 0xFFFF_FFFF : UInt32(size))
        entry.u16(UInt16(name.count))
        entry.u16(extra.data.isEmpty ? 0 : UInt16(extra.data.count + 4))
        entry.u16(0)
        entry.u16(0)
        entry.u16(0)
        entry.u32(external)
        entry.u32(start >= 0xFFFF_FFFF ? 0xFFFF_FFFF : UInt32(start))
        entry.bytes(name)
        if !extra.data.isEmpty {
            entry.u16(1)
            entry.u16(UInt16(extra.data.count))
            entry.bytes(extra.data)
        }
        central += entry.data
        count += 1
    }

    /// Bit 3 (sizes and CRC in the data descriptor), and bit 11 for a UTF-8 name.
    private static func flags(_ name: [UInt8]) -> UInt16 {
        String(validating: name, as: UTF8.self) != nil && name.contains(where: { $0 >= 0x80 }) ? 0x0808 : 0x0008
    }

    /// MS-DOS time and date (2-second steps, from 1980; earlier times are 1980-01-01), in UTC.
    static func dosTime(_ seconds: Int64) -> (UInt16, UInt16) {
        let clamped = max(seconds, 315_532_800)
        let iso = WebFormat.time(clamped).iso
        let parts = iso.split(whereSeparator: { "-T:Z".contains($0) }).compactMap { Int($0) }
        guard parts.count == 6, parts[0] <= 2107 else { return (0, 0x21) }
        let time = UInt16(parts[3] << 11 | parts[4] << 5 | parts[5] / 2)
        let date = UInt16((parts[0] - 1980) << 9 | parts[1] << 5 | parts[2])
        return (time, date)
    }

    /// The largest name a zip entry can carry.
    static let maximumNameBytes = 0xFFFF

    private struct Writer {
        var data: [UInt8] = []
        mutating func u16(_ value: UInt16) { data += [UInt8(value & 0xFF), UInt8(value >> 8)] }
        mutating func u32(_ value: UInt32) {
            for shift in stride(from: 0, to: 32, by: 8) { data.append(UInt8(value >> UInt32(shift) & 0xFF)) }
        }
        mutating func u64(_ value: UInt64) {
            for shift in stride(from: 0, to: 64, by: 8) { data.append(UInt8(value >> UInt64(shift) & 0xFF)) }
        }
        mutating func bytes(_ bytes: [UInt8]) { data += bytes }
    }
}
