import Foundation
import Glibc

/// Sets a damaged `state.db` aside (`recover`, after the cache is emptied): renamed with its
/// `-wal` and `-shm` to `state.db.damaged-YYYYMMDD-HHMMSS` (UTC) in the state directory, kept for
/// whoever wants to look into it, so the next mount starts over with a new database. The caller
/// holds the state directory's lock.
enum DamagedDatabaseSetAside {
    /// Moves the database; returns its new path.
    static func move(_ state: StateDirectory, now: Date) throws(MountError) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        var target = state.databasePath + ".damaged-" + formatter.string(from: now)
        var attempt = 1
        while access(target, F_OK) == 0 {
            attempt += 1
            target = state.databasePath + ".damaged-" + formatter.string(from: now) + "-\(attempt)"
        }
        // The companions first: a `-wal` left beside a new database would be replayed into it.
        for suffix in ["-wal", "-shm", ""] {
            let source = state.databasePath + suffix
            guard rename(source, target + suffix) == 0 || errno == ENOENT else {
                throw MountError(
                    .cannotCreate,
                    "cannot set the damaged database aside (\(source) to \(target + suffix)): "
                        + String(cString: strerror(errno)))
            }
        }
        return target
    }
}
