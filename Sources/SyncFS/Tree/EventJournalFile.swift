/// The text of the events journal's file (`events.journal` in the state directory, mode 0600),
/// one record a line:
///
///     syncfs-events 1 IDENTITY FLOOR      the header: the journal's identity (32 hex digits) and
///                                         the last sequence number trimmed away (0: none)
///     E SEQUENCE NANOSECONDS JSON         an event (`ChangeEvent.jsonLine`, without its newline)
///     H SEQUENCE NANOSECONDS              a hole: events before SEQUENCE may be lost (the daemon
///                                         stopped without closing the journal)
///     C SEQUENCE                          closed cleanly after SEQUENCE
///
/// Sequence numbers grow strictly from record to record (a `C` may repeat the last one). `parse`
/// checks all of that; a line cut short at the end (a crash during a write) is left out and
/// `validLength` says where the whole lines end.
enum EventJournalFile {
    static let name = "events.journal"
    static let magic = "syncfs-events 1"

    enum Record: Equatable {
        case event(sequence: UInt64, nanoseconds: Int64, json: [UInt8])
        case hole(sequence: UInt64, nanoseconds: Int64)
        case closed(sequence: UInt64)

        var sequence: UInt64 {
            switch self {
            case .event(let sequence, _, _), .hole(let sequence, _), .closed(let sequence): sequence
            }
        }

        /// When it was written; nil for `closed`.
        var nanoseconds: Int64? {
            switch self {
            case .event(_, let nanoseconds, _), .hole(_, let nanoseconds): nanoseconds
            case .closed: nil
            }
        }

        var line: [UInt8] {
            switch self {
            case .event(let sequence, let nanoseconds, let json):
                Array("E \(sequence) \(nanoseconds) ".utf8) + json + [10]
            case .hole(let sequence, let nanoseconds): Array("H \(sequence) \(nanoseconds)\n".utf8)
            case .closed(let sequence): Array("C \(sequence)\n".utf8)
            }
        }
    }

    struct Contents: Equatable {
        var identity: String
        var floor: UInt64
        var records: [Record]
        /// The bytes that are whole lines (a torn last line ends before it).
        var validLength: Int
    }

    /// Why a file is not a journal.
    struct Damage: Error, Equatable {
        var reason: String
    }

    static func header(identity: String, floor: UInt64) -> [UInt8] { Array("\(magic) \(identity) \(floor)\n".utf8) }

    static func parse(_ data: [UInt8]) throws(Damage) -> Contents {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        for index in data.indices where data[index] == 10 {
            lines.append(data[start..<index])
            start = index + 1
        }
        guard let first = lines.first else { throw Damage(reason: "no header") }
        let headerFields = first.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard headerFields.count == 4, String(decoding: first, as: UTF8.self).hasPrefix(magic + " "),
            isIdentity(headerFields[2]), let floor = number(headerFields[3])
        else { throw Damage(reason: "not a journal header") }
        var contents = Contents(
            identity: String(decoding: headerFields[2], as: UTF8.self), floor: floor, records: [], validLength: start)
        var last = floor
        for (index, line) in lines.enumerated().dropFirst() {
            guard let record = self.record(line) else { throw Damage(reason: "line \(index + 1) is malformed") }
            // A clean close repeats the last number, or a later one (events numbered unwritten).
            let ordered = record.nanoseconds == nil ? record.sequence >= last : record.sequence > last
            guard ordered else { throw Damage(reason: "line \(index + 1) is out of order") }
            last = record.sequence
            contents.records.append(record)
        }
        return contents
    }

    private static func record(_ line: ArraySlice<UInt8>) -> Record? {
        let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 3, omittingEmptySubsequences: false)
        guard let tag = fields.first, tag.count == 1, fields.count >= 2, let sequence = number(fields[1]) else {
            return nil
        }
        switch tag.first {
        case UInt8(ascii: "E"):
            guard fields.count == 4, let nanoseconds = number(fields[2]), fields[3].first == UInt8(ascii: "{"),
                fields[3].last == UInt8(ascii: "}")
            else { return nil }
            return .event(sequence: sequence, nanoseconds: Int64(clamping: nanoseconds), json: Array(fields[3]))
        case UInt8(ascii: "H"):
            guard fields.count == 3, let nanoseconds = number(fields[2]) else { return nil }
            return .hole(sequence: sequence, nanoseconds: Int64(clamping: nanoseconds))
        case UInt8(ascii: "C"):
            return fields.count == 2 ? .closed(sequence: sequence) : nil
        default:
            return nil
        }
    }

    /// A decimal number without sign or leading garbage, of at most 20 digits.
    private static func number(_ field: ArraySlice<UInt8>) -> UInt64? {
        guard (1...20).contains(field.count),
            field.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return UInt64(String(decoding: field, as: UTF8.self))
    }

    /// 32 lowercase hex digits.
    static func isIdentity<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.count == 32
            && bytes.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }
}
