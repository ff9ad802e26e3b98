import ArgumentParser
import Foundation
import SyncBackend
import SyncFS
import SyncServer

/// `syncfs-mount audit`: the audit log of a server (who did what, from where, how it ended).
struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Print a server's audit log (oldest first).")

    @OptionGroup var place: AccessPlaceOptions

    @Option(help: ArgumentHelp("Only this container's lines.", valueName: "name"))
    var container: String?

    @Option(
        help: ArgumentHelp(
            "Only lines since this time: an ISO 8601 date or time (2026-11-30, 2026-11-30T08:00:00Z) or an age (30m, 24h, 7d).",
            valueName: "time"))
    var since: String = "7d"

    @Option(help: ArgumentHelp("At most this many lines.", valueName: "count"))
    var limit: Int = 10_000

    @Flag(help: "Print one JSON object per line: time, container, actor, address, action, target, result.")
    var json = false

    func validate() throws {
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be 1...1000000") }
        guard PointInTime.parse(since, now: 0) != nil else {
            throw ValidationError("--since must be an ISO 8601 date or time, or an age such as 24h or 7d")
        }
        if let container, !ContainerName.isValid(container) {
            throw ValidationError("'\(container)' is not a container name")
        }
    }

    func run() throws {
        let start = PointInTime.parse(since, now: Int64(Date().timeIntervalSince1970)) ?? 0
        let (container, limit) = (container, limit)
        let lines = try place.withAdmin { admin throws(SyncServerError) in
            try await admin.store.audit(container: container, since: start, limit: limit)
        }
        if lines.count == limit {
            printError("syncfs-mount: only the first \(limit) lines are shown: there may be more (a later --since)")
        }
        if json {
            for line in lines { print(jsonLine(line)) }
            return
        }
        guard !lines.isEmpty else { return printError("no audit lines since \(isoTime(start))") }
        for line in lines {
            let place = line.container.map { " [\($0)]" } ?? ""
            let from = line.address.map { " from \($0)" } ?? ""
            print(
                "\(isoTime(line.time))\(place) \(Self.clean(line.actor))\(from): \(Self.clean(line.action)) "
                    + "\(Self.clean(line.target)) -> \(Self.clean(line.result))")
        }
    }

    /// Text that came over the network, made safe for a terminal.
    static func clean(_ text: String) -> String { TerminalText.safe(text) }
}

/// A time given on the command line: an ISO 8601 date (`2026-11-30`, midnight UTC) or time
/// (`2026-11-30T08:00:00Z`), or an age before now (`DurationText`: `30m`, `24h`, `7d`, `2w`).
enum PointInTime {
    static func parse(_ text: String, now: Int64) -> Int64? {
        if case .success(let age) = DurationText.seconds(text) { return now - Int64(age) }
        if let date = try? Date(text, strategy: .iso8601) { return Int64(date.timeIntervalSince1970) }
        if let day = try? Date(text + "T00:00:00Z", strategy: .iso8601) { return Int64(day.timeIntervalSince1970) }
        return nil
    }
}
