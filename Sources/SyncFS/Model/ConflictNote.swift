import Foundation
import SyncBackend

/// What a conflict copy records about its conflict, as the synced extended attribute
/// `user.syncfs.conflict` (JSON), so every mount knows it and lists it. A file merged with
/// conflict markers carries one too, naming itself.
struct ConflictNote: Codable, Equatable, Sendable {
    /// File ID (hex) of the entry this copy was split from (the file itself for markers).
    var of: String
    /// The device name (`DeviceName`) of the mount that kept the copy. Written by any machine:
    /// shown only through `DeviceName.sanitised`.
    var host: String
    /// When, ISO-8601 UTC.
    var time: String
    /// Why, in words (`status`, `conflicts` and the log show it).
    var reason: String

    /// The synced attribute that marks a conflict copy.
    static let attribute = "user.syncfs.conflict"

    /// The note for a copy split from `original` on the device `host`, as the attribute's value.
    static func encoded(of original: FileID, host: DeviceName, reason: String, now: Int64) -> [UInt8] {
        let seconds = Double(now) / 1e9
        let note = ConflictNote(
            of: original.hex, host: host.text,
            time: ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds)), reason: reason)
        return Array((try? JSONEncoder().encode(note)) ?? Data())
    }

    /// The entry a conflict copy with these xattrs was split from, if it is one.
    static func original(in xattrs: [String: [UInt8]]) -> FileID? {
        guard let value = xattrs[attribute], let note = try? JSONDecoder().decode(ConflictNote.self, from: Data(value))
        else { return nil }
        return FileID(hex: note.of)
    }
}

/// One unresolved conflict, for `syncfs-mount conflicts`.
public struct ConflictListing: Codable, Sendable, Equatable {
    /// The copy (or the file with markers), relative to the mount point.
    public var path: String
    /// The entry it was split from, if it still exists.
    public var originalPath: String?
    public var host: String
    public var time: String
    public var reason: String
    // Optional only so that a newer client can read an older daemon's answer.
    /// The copy's file ID (32 hex digits).
    public var fileID: String?
    /// The original's file ID.
    public var originalFileID: String?
    /// The copy was made by this mount (its `host` is this mount's device name): the copy holds
    /// this mount's version and the original the other side's. False: the other way round —
    /// the original holds the version this mount had, the copy the one from `host`
    /// (`resolve --keep local|remote`, doc/CLI.md).
    public var keptHere: Bool?
}
