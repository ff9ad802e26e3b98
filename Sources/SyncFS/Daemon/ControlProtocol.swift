import Foundation
import SyncBackend

/// One request on the control socket (a line of JSON). `path` is relative to the mount point.
///
/// `events` (with an optional `path`; a trailing `/` watches the folder below it) keeps the
/// connection open: the daemon answers one `ControlReply` line (`watching`, or `error`), then
/// writes one `ChangeEvent` line per change until the client closes or the daemon stops.
/// `since` (a cursor) first replays the journal's events after it; `snapshot` first lists the
/// entries; `states` keeps only entries and events of those states (`EventStream`).
public struct ControlRequest: Codable, Sendable {
    public enum Command: String, Codable, Sendable {
        case status, sync
        case pathStatus = "path-status"
        case pin, unpin, evict, download
        case conflicts, resolve
        case events
        /// The mass-delete guard: let the held changes go, or undo them here (`DeleteGuard`).
        case release, discard
        /// The container's history (`HistoryService`): `path`'s versions, the deleted
        /// entries, and bringing one back (`path` or `fileID`, `version`, `destination`).
        case versions, trash, restore
        /// Checks the tree against the container and corrects it (`TreeChecker`).
        case verify
        /// Selective sync: keeps the folder `path` off this device, or brings it back (`SelectiveSync`).
        case exclude, include
        /// The bandwidth limits: sets `upload`/`download` (a RATE or `off`), or `reset`s them;
        /// answers the status (its `bandwidth`).
        case limit
        /// Pauses the mount's uploads and feed (`pauseSeconds`, `pauseAll`), or ends the pause
        /// (`SyncPause`).
        case pause, resume
    }

    public var command: Command
    public var path: String?
    /// `restore`: the version to bring back.
    public var version: UInt64?
    /// `restore`: a deleted entry by its file ID (32 hex digits) instead of `path`.
    public var fileID: String?
    /// `restore`: where to put it instead (relative to the mount point; must not exist).
    public var destination: String?
    /// `events`: replay the events after this cursor first.
    public var since: String?
    /// `events`: list the entries first (`snapshot-end` ends the list).
    public var snapshot: Bool?
    /// `events`: only entries and events in these states (`ContentState` names).
    public var states: [String]?
    /// `status`: also list every ignored path (`IgnoreStatus.paths`).
    public var ignored: Bool?
    /// `limit`: the new upload or download limit (a RATE, `off`); `reset`: back to the options.
    public var upload: String?
    public var download: String?
    public var reset: Bool?
    /// `pause`: it ends by itself after this many seconds (nil: only `resume` ends it).
    public var pauseSeconds: Int?
    /// `pause`: downloads too (a read of a placeholder fails as offline).
    public var pauseAll: Bool?

    public init(
        _ command: Command, path: String? = nil, version: UInt64? = nil, fileID: String? = nil,
        destination: String? = nil
    ) {
        self.command = command
        self.path = path
        self.version = version
        self.fileID = fileID
        self.destination = destination
    }
}

/// The daemon's answer (a line of JSON): one of the parts, or `error`.
public struct ControlReply: Codable, Sendable {
    public var status: SyncStatus?
    public var path: PathStatus?
    public var action: ActionReport?
    /// `conflicts`: every unresolved conflict of the mount.
    public var conflicts: [ConflictListing]?
    public var error: String?
    /// `events`: the subscription is live; the filter it watches ("" everything, a path, or a
    /// folder ending in `/`).
    public var watching: String?
    /// `events`: the journal's cursor at the moment watching began.
    public var cursor: String?
    /// `versions`, `trash`, `restore`.
    public var history: HistoryListing?
    public var trash: [TrashListing]?
    public var restore: RestoreReport?
    /// `verify`.
    public var treeCheck: TreeCheckReport?
    /// With `error`: trying again later may help (the container did not answer).
    public var retryable: Bool?
}

/// One path's state, for `status PATH`.
public struct PathStatus: Codable, Sendable {
    public struct Progress: Codable, Sendable {
        public var done: Int64
        public var total: Int64
    }

    public var path: String
    public var kind: String
    public var state: ContentState
    public var pinned: PinState
    public var size: Int64
    public var localBytes: Int64
    public var progress: Progress?
    public var error: String?
    /// Directories: the files below by state.
    public var files: FileCounts?
    /// Files: the size; directories: the sizes of all files below (what `download` waits for).
    public var totalBytes: Int64?
    /// Files: the advisory locks held on it, on every mount (`PathLock`); nil from an older daemon.
    public var locks: [PathLock]?
    /// Files: locks of this mount lost lately (`lock-lost`), oldest first; nil when none.
    public var lostLocks: [String]?
}

/// What `pin`, `unpin`, `evict` and `download` did.
public struct ActionReport: Codable, Sendable {
    public struct Refusal: Codable, Sendable {
        public var path: String
        public var reason: String
    }

    public var files = 0
    public var bytes: Int64 = 0
    public var refused: [Refusal] = []
}

/// A transfer in progress, for `status`.
public struct TransferStatus: Codable, Sendable {
    public var path: String
    public var direction: TransferBoard.Direction
    public var done: Int64
    public var total: Int64
}
