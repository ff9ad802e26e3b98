/// The checks both ends of the protocol make on version history (`ContainerHistory` over HTTP,
/// doc/PROTOCOL.md "Version history and the trash"): what a request may ask for, and what an
/// answer may hold. The server refuses a request outside them (`400`); the client asks for
/// nothing outside them, and refuses an answer that breaks them (`unavailable`: the server is
/// not speaking this protocol), so nothing a hostile server sends reaches its caller unchecked.
public enum HistoryAnswerValidation {
    /// The versions `before` may name on the wire (versions are SQLite integers).
    public static let beforeRange: ClosedRange<EntryVersion> = 1...EntryVersion(Int64.max)

    /// Why `versions`, answered for `history(of: id, limit: limit)`, must be refused, or nil.
    /// Every version is a valid entry (`RemoteEntryValidation`) of `id`, at most `limit` of
    /// them, newest first (versions strictly falling); only the first (the current version) may
    /// lack `replacedAt`.
    public static func problem(withHistory versions: [HistoricVersion], of id: FileID, limit: Int) -> String? {
        guard versions.count <= limit else { return "\(versions.count) versions where at most \(limit) were asked" }
        for (index, version) in versions.enumerated() {
            if let problem = problem(with: version) { return problem }
            guard version.entry.id == id else { return "a version of \(version.entry.id) in the history of \(id)" }
            if index > 0 {
                guard version.entry.version < versions[index - 1].entry.version else {
                    return "the versions are not newest first"
                }
                guard version.replacedAt != nil else {
                    return "version \(version.entry.version) is listed after a newer one but was never replaced"
                }
            }
        }
        return nil
    }

    /// Why `versions`, answered for `deletedEntries(before: before, limit: limit)`, must be
    /// refused, or nil. Every one is a valid tombstone (`RemoteEntryValidation`), current
    /// (`replacedAt` nil), below `before`, at most `limit` of them, newest first, one per entry.
    public static func problem(withTrash versions: [HistoricVersion], before: EntryVersion?, limit: Int) -> String? {
        guard versions.count <= limit else { return "\(versions.count) entries where at most \(limit) were asked" }
        var seen: Set<FileID> = []
        for (index, version) in versions.enumerated() {
            if let problem = problem(with: version) { return problem }
            let entry = version.entry
            guard entry.isDeleted, version.replacedAt == nil else {
                return "entry \(entry.id) at version \(entry.version) is not a current tombstone"
            }
            if let before, entry.version >= before { return "version \(entry.version) is not below \(before)" }
            if index > 0, entry.version >= versions[index - 1].entry.version {
                return "the deleted entries are not newest first"
            }
            guard seen.insert(entry.id).inserted else { return "entry \(entry.id) is listed twice" }
        }
        return nil
    }

    /// What every version must be: a valid entry, committed and replaced at times that are not
    /// negative.
    private static func problem(with version: HistoricVersion) -> String? {
        if let problem = RemoteEntryValidation.problem(with: version.entry) {
            return "entry \(version.entry.id) at version \(version.entry.version): \(problem)"
        }
        guard version.committedAt >= 0, (version.replacedAt ?? 0) >= 0 else {
            return "entry \(version.entry.id) at version \(version.entry.version) has a negative time"
        }
        return nil
    }
}
