import Foundation

/// Names for recovered content, from the one durable place besides the lost database that
/// mentions file IDs with paths: the daemon's log (`STATE/syncfs.log`, written in background
/// mode). Its lines name a file with its ID only on some events — a failed upload (so a change not
/// yet uploaded), content found lost or damaged, a download (at debug level) — so a hint is the
/// last path the log gave an ID, possibly out of date and escaped for the terminal
/// (`LogText.line`): `recover` lists it in `RECOVERED.txt` and never names a file by it.
enum RecoveryHints {
    /// How much of the end of the log is read.
    static let readLimit = 16 << 20

    private static let patterns: [NSRegularExpression] = [
        #"upload of (.+?) \(([0-9a-f]{32})\) failed"#,
        #"downloaded (.+?) \(([0-9a-f]{32})\): "#,
        #"cannot download (.+?) \(([0-9a-f]{32})\)"#,
        #"not uploading (.+?) \(file ([0-9a-f]{32})\)"#,
        #"the cached copy of (.+?) \(file ([0-9a-f]{32})\) is damaged"#,
    ].compactMap { try? NSRegularExpression(pattern: $0) }

    /// The last path the log at `path` gave each file ID (hex), if any.
    static func lastPaths(inLog path: String) -> [String: String] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [:] }
        defer { try? handle.close() }
        let end = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: end > UInt64(readLimit) ? end - UInt64(readLimit) : 0)
        guard let data = try? handle.readToEnd() else { return [:] }
        return lastPaths(inText: String(decoding: data, as: UTF8.self))
    }

    static func lastPaths(inText text: String) -> [String: String] {
        var hints: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let line = String(line)
            let range = NSRange(line.startIndex..., in: line)
            for pattern in patterns {
                guard let match = pattern.firstMatch(in: line, range: range),
                    let name = Range(match.range(at: 1), in: line), let id = Range(match.range(at: 2), in: line)
                else { continue }
                hints[String(line[id])] = String(line[name])
                break
            }
        }
        return hints
    }
}
