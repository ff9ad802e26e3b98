import SyncFS

/// The ignore lines of `status` (doc/CLI.md): how many changes are held as ignored, which synced
/// ignore files decide some of them (another token holder's rules must be visible), and with
/// `--ignored` every ignored path with the line that decided it.
enum IgnoreStatusLines {
    static func text(_ status: IgnoreStatus?) -> [String] {
        guard let status else { return [] }
        var lines: [String] = []
        if status.entries > 0 {
            lines.append("ignored: \(HumanUnits.count(status.entries, "change")) held here (never uploaded)")
        }
        for synced in status.bySyncedFiles {
            lines.append("ignored by synced \(synced.file): \(HumanUnits.count(synced.entries, "change"))")
        }
        for file in status.unreadableFiles {
            lines.append("waiting for \(file): new entries below its folder wait until it is downloaded")
        }
        for path in status.paths ?? [] {
            lines.append("ignored \(path.path) (\(path.file):\(path.line): \(path.pattern))")
        }
        return lines
    }
}
