import Foundation
import Glibc
import Logging
import SyncBackend
import SyncClient
import SyncFS

/// Which of several servers a mount uses now (`FailoverContainer`), for `status`: the daemon
/// writes `STATE_DIR/server.json` (0600, replaced atomically) at each switch and logs it;
/// `status` reads it through the mount's record. A mount of one server has no such file (it is
/// removed at open, so a stale one never shows).
///
/// `{"server": URL, "since": RFC 3339, "previous": URL?, "reason": String?}`
struct ServerChoice: Codable, Equatable {
    var server: String
    var since: String
    var previous: String?
    var reason: String?

    static func file(_ stateDirectory: String) -> String { stateDirectory + "/server.json" }

    static func record(_ change: FailoverSwitch, stateDirectory: String, logger: Logger) {
        if let previous = change.previous {
            let why = change.reason.map { " (\(previous): \($0))" } ?? ""
            logger.notice("switched from \(previous) to \(change.server)\(why)")
        } else {
            logger.info("using server \(change.server)")
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        let choice = ServerChoice(
            server: change.server.description, since: formatter.string(from: Date()),
            previous: change.previous?.description, reason: change.reason)
        guard let data = try? JSONEncoder().encode(choice) else { return }
        let target = file(stateDirectory)
        let temporary = target + ".tmp-\(getpid())"
        unlink(temporary)
        if PrivateFiles.createFile(temporary, Array(data)) == nil, rename(temporary, target) == 0 { return }
        unlink(temporary)
    }

    static func forget(stateDirectory: String) { unlink(file(stateDirectory)) }

    /// The choice of the mount at `mountpoint` (nil for a mount of one server, or none running).
    static func current(mountpoint: String) -> ServerChoice? {
        guard case .success(let records) = MountRecord.all(),
            let record = records.first(where: { $0.mountpoint == mountpoint }),
            let data = FileManager.default.contents(atPath: file(record.stateDirectory)), data.count < 65_536
        else { return nil }
        return try? JSONDecoder().decode(ServerChoice.self, from: data)
    }

    /// The line `status` prints.
    var statusLine: String {
        var line = "server: \(server) (since \(LocalTime.local(since))"
        if let previous {
            line += "; switched from \(previous)" + (reason.map { ": \($0)" } ?? "")
        }
        return line + ")"
    }

    /// `status --json`: the daemon's status, with `"server"` (this value) when there is one.
    static func json(_ status: SyncStatus, server: ServerChoice?, encoder: JSONEncoder) -> String {
        let encoded = (try? encoder.encode(status)) ?? Data()
        guard let server, var object = (try? JSONSerialization.jsonObject(with: encoded)) as? [String: Any],
            let choice = try? JSONSerialization.jsonObject(with: encoder.encode(server))
        else { return String(decoding: encoded, as: UTF8.self) }
        object["server"] = choice
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? encoded
        return String(decoding: data, as: UTF8.self)
    }
}
