/// A place in a mount's events journal, as `events` prints it (`cursor`) and `--since` takes it
/// back: the journal's identity (32 hex digits, random, made with the journal) and the sequence
/// number of the last event seen, `IDENTITY.SEQUENCE`.
///
/// A cursor is client input: `parse` accepts only this exact form of at most `maximumLength`
/// bytes; anything else is nil (the stream answers `reset`, never fails).
struct EventCursor: Equatable, Sendable {
    static let maximumLength = 64

    var journal: String
    var sequence: UInt64

    var text: String { "\(journal).\(sequence)" }

    static func parse(_ text: String) -> EventCursor? {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumLength, let dot = bytes.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let identity = bytes[..<dot]
        let digits = bytes[(dot + 1)...]
        guard EventJournalFile.isIdentity(identity), (1...20).contains(digits.count),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let sequence = UInt64(String(decoding: digits, as: UTF8.self))
        else { return nil }
        return EventCursor(journal: String(decoding: identity, as: UTF8.self), sequence: sequence)
    }
}
