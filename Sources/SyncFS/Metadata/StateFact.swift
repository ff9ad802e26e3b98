import Foundation
import SyncBackend

/// The key of every fact the state database's `meta` table holds. doc/FORMATS.md, "`state.db`",
/// has one row per case (`StateFormatDocumentTests` keeps the two equal).
enum StateFactKey: String, CaseIterable, Sendable {
    case containerID = "container_id"
    case container
    case mountpoint
    case tokenFile = "token_file"
    case caFile = "ca_file"
    case deviceID = "device_id"
    case deviceName = "device_name"
    case mountCount = "mount_count"
    case nextIno = "next_ino"
    case feedCursor = "feed_cursor"
    case deferredIDs = "deferred_ids"
    case treeAttached = "tree_attached"
    case lastSync = "last_sync"
    case writeFailures = "write_failures"
    case guardHold = "guard_hold"
    case excludedFolders = "excluded_folders"
    case bandwidthOverrides = "bandwidth_overrides"
    case paused
    case accessRole = "access_role"
    case sealed
}

/// One fact of the state database: its key, its Swift type and its text in the `meta` table.
/// Every read and write of a fact goes through one of these (`StateFacts[fact]`,
/// `MetadataStore.factSet`, `MetadataChange.fact`), so no caller spells a key or parses a value.
///
/// For every fact an empty text reads as absent: a cleared fact (`factSet(_, nil)`).
public struct StateFact<Value>: Sendable {
    let key: StateFactKey
    let encode: @Sendable (Value) -> String
    let decode: @Sendable (String) -> Value?

    init(
        _ key: StateFactKey, encode: @escaping @Sendable (Value) -> String,
        decode: @escaping @Sendable (String) -> Value?
    ) {
        self.key = key
        self.encode = encode
        self.decode = decode
    }

    /// The text stored for `value`; "" (cleared) for nil.
    func text(_ value: Value?) -> String { value.map(encode) ?? "" }
}

extension StateFact where Value == String {
    private init(text key: StateFactKey) { self.init(key, encode: { $0 }, decode: { $0 }) }

    /// The ID of the container this state belongs to (set by the first mount).
    public static var containerID: Self { .init(text: .containerID) }
    /// The container as the last mount named it: an absolute path or a normalised server URL.
    public static var container: Self { .init(text: .container) }
    /// The absolute mount point of the last mount (written by every mount).
    public static var mountpoint: Self { .init(text: .mountpoint) }
    /// For a server URL: the `--token-file` and `--ca-file` of the last mount (absolute paths;
    /// cleared when not given), so the command that resumes it can name them.
    public static var tokenFile: Self { .init(text: .tokenFile) }
    public static var caFile: Self { .init(text: .caFile) }
    /// This state directory's device ID (32 hex digits), stamped on its commits.
    static var deviceID: Self { .init(text: .deviceID) }
}

extension StateFact where Value == DeviceName {
    /// The name this device's conflict copies carry; a stored text that is not a valid name reads
    /// as absent.
    static var deviceName: Self { .init(.deviceName, encode: \.text, decode: DeviceName.init(validating:)) }
}

extension StateFact where Value == UInt64 {
    /// How many times this state directory was mounted (decimal); the inode generation.
    static var mountCount: Self { .init(.mountCount, encode: { String($0) }, decode: { UInt64($0) }) }
    /// The next inode number to hand out (decimal).
    static var nextIno: Self { .init(.nextIno, encode: { String($0) }, decode: { UInt64($0) }) }
}

extension StateFact where Value == FeedCursor {
    /// The follower's position in the change feed (the container's opaque token).
    static var feedCursor: Self { .init(.feedCursor, encode: \.token, decode: FeedCursor.init(token:)) }
}

extension StateFact where Value == Set<FileID> {
    /// Remote changes to retry: their file IDs, sorted, comma-separated (an unreadable ID is skipped).
    static var deferredIDs: Self {
        .init(
            .deferredIDs, encode: { $0.map(\.hex).sorted().joined(separator: ",") },
            decode: { Set($0.split(separator: ",").compactMap { FileID(hex: String($0)) }) })
    }
}

extension StateFact where Value == Set<FileID> {
    /// The folders excluded from this device (selective sync): their file IDs, sorted,
    /// comma-separated (an unreadable ID is skipped).
    static var excludedFolders: Self {
        .init(
            .excludedFolders, encode: { $0.map(\.hex).sorted().joined(separator: ",") },
            decode: { Set($0.split(separator: ",").compactMap { FileID(hex: String($0)) }) })
    }
}

extension StateFact where Value == [FileID: Int32] {
    /// Files a write into failed (`Node.writeFailure`): `<file ID>:<errno>` pairs, sorted,
    /// comma-separated (an unreadable pair is skipped).
    static var writeFailures: Self {
        .init(
            .writeFailures, encode: { $0.map { "\($0.key.hex):\($0.value)" }.sorted().joined(separator: ",") },
            decode: { text in
                var failures: [FileID: Int32] = [:]
                for pair in text.split(separator: ",") {
                    let parts = pair.split(separator: ":")
                    guard parts.count == 2, let id = FileID(hex: String(parts[0])), let code = Int32(parts[1]), code > 0
                    else { continue }
                    failures[id] = code
                }
                return failures
            })
    }
}

extension StateFact where Value == Bool {
    /// Whether the container's tree was attached here (`0` or `1`): `0` is written by a state
    /// directory's first mount before its follower starts, `1` once the follower reached the end
    /// of the change feed (`AttachTracker`). Absent on state directories older than the fact.
    static var treeAttached: Self {
        .init(.treeAttached, encode: { $0 ? "1" : "0" }, decode: { $0 == "1" ? true : $0 == "0" ? false : nil })
    }

    /// Whether the container is sealed (end-to-end encrypted), as its first mount found: `1` or
    /// `0`. Absent on state directories older than the fact.
    static var sealed: Self {
        .init(.sealed, encode: { $0 ? "1" : "0" }, decode: { $0 == "1" ? true : $0 == "0" ? false : nil })
    }
}

extension StateFact where Value == Date {
    /// When the flusher last committed a batch: seconds since the Unix epoch, as Swift prints a `Double`.
    static var lastSync: Self {
        .init(
            .lastSync, encode: { "\($0.timeIntervalSince1970)" },
            decode: { Double($0).map(Date.init(timeIntervalSince1970:)) })
    }
}

extension StateFact where Value == AccessRole {
    /// The role the container last granted this mount (doc/SEMANTICS.md, "A viewer's mount"); a
    /// stored text that is no role reads as `viewer` (safe side) until the container says otherwise.
    static var accessRole: Self {
        .init(.accessRole, encode: \.rawValue, decode: { AccessRole(rawValue: $0) ?? .viewer })
    }
}

/// The facts a state database holds, read typed: `facts[.nextIno]` is a `UInt64?`.
struct StateFacts: Sendable, Equatable {
    /// The `meta` table as stored, key → text.
    let stored: [String: String]

    init(_ stored: [String: String]) { self.stored = stored }

    /// The recorded value; absent, cleared (empty) or unreadable is nil.
    subscript<Value>(_ fact: StateFact<Value>) -> Value? {
        guard let text = stored[fact.key.rawValue], !text.isEmpty else { return nil }
        return fact.decode(text)
    }
}

extension MetadataChange {
    /// Sets `fact` to `value` (nil clears it).
    static func fact<Value>(_ fact: StateFact<Value>, _ value: Value?) -> MetadataChange {
        .setMeta(key: fact.key.rawValue, value: fact.text(value))
    }
}

extension StoredState {
    /// The `meta` table, typed.
    var facts: StateFacts { StateFacts(meta) }
}
