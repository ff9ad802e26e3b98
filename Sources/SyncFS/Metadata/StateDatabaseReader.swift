import Glibc
import SQLiteSupport

/// The facts a state directory's `state.db` records in its `meta` table that other commands read
/// (doc/FORMATS.md, "`state.db`").
public enum StateFact: String, Sendable {
    /// The ID of the container this state belongs to (set by the first mount).
    case containerID = "container_id"
    /// The container as the last mount named it: an absolute path or a normalised server URL.
    case container
    /// The absolute mount point of the last mount (written by every mount).
    case mountpoint
    /// For a server URL: the `--token-file` and `--ca-file` of the last mount (absolute paths;
    /// absent when not given), so the command that resumes it can name them.
    case tokenFile = "token_file"
    case caFile = "ca_file"
}

/// What a state directory holds, read without opening it for writing (`SQLiteReadOnly`): no
/// lock a live daemon needs is taken, nothing is created or changed.
public struct StateDatabaseSummary: Sendable, Equatable {
    public var facts: [String: String]
    /// Changes queued for upload (rows of the `outbox`).
    public var queued: Int

    /// The recorded value; an empty one (a fact cleared) reads as absent.
    public func fact(_ fact: StateFact) -> String? { facts[fact.rawValue].flatMap { $0.isEmpty ? nil : $0 } }
}

public enum StateDatabaseReader {
    /// The summary of the database at `databasePath`, or nil if it is missing, not a SyncFS
    /// state database, or busy.
    ///
    /// A cleanly closed database (no `-wal`, or an empty one) is read `immutable`: nothing beside
    /// it is created or touched. One a killed daemon left with a `-wal` is read through a plain
    /// read-only connection, so the changes in the `-wal` count; SQLite may then update the
    /// `-shm` index next to it (never the database or the `-wal`).
    public static func summary(databasePath: String) -> StateDatabaseSummary? {
        var wal = stat()
        let immutable = stat(databasePath + "-wal", &wal) != 0 || wal.st_size == 0
        guard
            let facts = try? SQLiteReadOnly.query(databasePath, "SELECT key, value FROM meta", immutable: immutable),
            let count = try? SQLiteReadOnly.query(
                databasePath, "SELECT COUNT(*) FROM outbox", immutable: immutable
            ).first?.first,
            let queued = count.flatMap({ Int($0) })
        else { return nil }
        var recorded: [String: String] = [:]
        for row in facts where row.count == 2 {
            if let key = row[0], let value = row[1] { recorded[key] = value }
        }
        return StateDatabaseSummary(facts: recorded, queued: queued)
    }

    /// The facts of the state directory at `stateDirectory` (a path the user named), or nil.
    static func recordedFacts(stateDirectory: String) -> [String: String]? {
        summary(databasePath: StateDirectory(path: stateDirectory).databasePath)?.facts
    }
}

extension StateFact {
    /// Records what every mount writes: the mount point, and a server's token and CA files
    /// (cleared when this mount gives none).
    static func record(_ configuration: MountConfiguration, in store: MetadataStore) {
        store.factSet(StateFact.mountpoint.rawValue, configuration.mountpoint)
        store.factSet(StateFact.tokenFile.rawValue, configuration.tokenFile ?? "")
        store.factSet(StateFact.caFile.rawValue, configuration.caFile ?? "")
    }
}
