/// What an entry's state must look like, for containers (a commit that breaks a rule is
/// `invalidRequest`) and for clients (a remote entry that breaks one is refused, never applied:
/// `RemoteEntryValidation`). One set of rules, so a container never stores what clients refuse.
///
/// The rules restate `EntryState`'s documentation and add the bounds a client needs to turn the
/// state into a directory entry safely:
/// - the root (`FileID.root`) has no parent, an empty name and is a directory;
/// - any other entry has a parent and a name of 1...255 bytes without `/` or NUL, not `.` or `..`
///   (a name is one path component); a commit that puts a directory into itself is a
///   `wouldCreateCycle` outcome, a client refuses an entry that is its own parent;
/// - `mode` fits `0o7777`;
/// - a file's manifest lengths are positive, at most `WireProtocol.maxChunkPlainLength` each, and
///   add up to its `size`; a directory or symlink has no manifest and size 0;
/// - a symlink, and only a symlink, has a target: 1...4095 bytes without NUL (Linux's
///   `PATH_MAX`), kept as data (clients never follow it);
/// - extended attributes are `user.` names (6...255 bytes, no NUL; of the folder's own
///   `user.syncfs.` names only the synced conflict note), values of at most 64 KiB, at most
///   `maxXattrBytes` in all.
public enum EntryStateRules {
    /// The longest symlink target (PATH_MAX less the terminating NUL).
    public static let maxSymlinkTarget = 4095
    /// The largest extended attribute value (XATTR_SIZE_MAX).
    public static let maxXattrValue = 65536
    /// The most bytes (names and values) of extended attributes one entry may carry.
    public static let maxXattrBytes = 1 << 20
    /// The one `user.syncfs.` attribute that syncs: the conflict note of a conflict copy.
    public static let conflictNoteAttribute = "user.syncfs.conflict"

    /// Throws `invalidRequest` naming the first rule `state` breaks as the state of entry `id`.
    public static func check(_ state: EntryState, of id: FileID) throws(ContainerProtocolError) {
        if id == .root {
            guard state.parent == nil, state.name.isEmpty, state.kind == .directory else {
                throw .invalidRequest("the root must be a directory with no parent and an empty name")
            }
        } else {
            guard state.parent != nil else { throw .invalidRequest("entry \(id) has no parent") }
            try checkName(state.name)
        }
        guard state.mode & ~0o7777 == 0 else { throw .invalidRequest("mode \(state.mode) is not within 0o7777") }
        try checkContent(state)
        try checkXattrs(state.xattrs)
    }

    /// 1...255 bytes, no `/`, no NUL, not `.` or `..`.
    public static func checkName(_ name: [UInt8]) throws(ContainerProtocolError) {
        guard (1...255).contains(name.count), !name.contains(0x2F), !name.contains(0) else {
            throw .invalidRequest("a name must have 1 to 255 bytes and no '/' or NUL")
        }
        guard name != [0x2E], name != [0x2E, 0x2E] else {
            throw .invalidRequest("'.' and '..' are not names an entry can have")
        }
    }

    private static func checkContent(_ state: EntryState) throws(ContainerProtocolError) {
        switch state.kind {
        case .file:
            guard state.symlinkTarget == nil else { throw .invalidRequest("a file has no symlink target") }
            var total: Int64 = 0
            for piece in state.manifest {
                guard piece.length > 0, piece.length <= WireProtocol.maxChunkPlainLength else {
                    throw .invalidRequest(
                        "a manifest chunk length must be 1 to \(WireProtocol.maxChunkPlainLength), not \(piece.length)")
                }
                let (sum, overflow) = total.addingReportingOverflow(piece.length)
                guard !overflow else { throw .invalidRequest("the manifest lengths overflow") }
                total = sum
            }
            guard total == state.size else {
                throw .invalidRequest("file size \(state.size) differs from the manifest's total \(total)")
            }
        case .directory, .symlink:
            guard state.manifest.isEmpty, state.size == 0 else {
                throw .invalidRequest("only a file has a manifest and a size")
            }
            guard (state.kind == .symlink) == (state.symlinkTarget != nil) else {
                throw .invalidRequest("a symlink, and only a symlink, has a target")
            }
            if let target = state.symlinkTarget {
                guard (1...maxSymlinkTarget).contains(target.count), !target.contains(0) else {
                    throw .invalidRequest("a symlink target must have 1 to \(maxSymlinkTarget) bytes and no NUL")
                }
            }
        }
    }

    private static func checkXattrs(_ xattrs: [String: [UInt8]]) throws(ContainerProtocolError) {
        var total = 0
        for (name, value) in xattrs {
            let length = name.utf8.count
            guard name.hasPrefix("user."), (6...255).contains(length), !name.utf8.contains(0) else {
                throw .invalidRequest("extended attribute names are user.NAME of 6 to 255 bytes without NUL")
            }
            guard !name.hasPrefix("user.syncfs.") || name == conflictNoteAttribute else {
                throw .invalidRequest("\(name) is the folder's own attribute; it does not sync")
            }
            guard value.count <= maxXattrValue else {
                throw .invalidRequest("the value of \(name) is over \(maxXattrValue) bytes")
            }
            total += length + value.count
        }
        guard total <= maxXattrBytes else {
            throw .invalidRequest("extended attributes total over \(maxXattrBytes) bytes")
        }
    }
}

/// The checks a client makes on every entry a container sends (change feed, entry reads, commit
/// answers) before anything is done with it: the entry's state (live or tombstone) follows
/// `EntryStateRules`, its version is one a commit can have (1...2^63-1), and its device is a short
/// printable text, and it is not its own parent. A client that gets a failing entry refuses it and
/// changes nothing local.
public enum RemoteEntryValidation {
    /// The longest device identity accepted (they are short IDs; the name shows in conflicts).
    public static let maxDeviceLength = 256

    /// Why `entry` must not be applied, or nil if it may be.
    public static func problem(with entry: RemoteEntry) -> String? {
        guard entry.version >= 1, entry.version <= UInt64(Int64.max) else {
            return "version \(entry.version) is not one a container gives"
        }
        guard entry.device.utf8.count <= maxDeviceLength,
            !entry.device.unicodeScalars.contains(where: \.isControlLike)
        else {
            return "its device name is over \(maxDeviceLength) bytes or holds control characters"
        }
        if entry.isDeleted && entry.id == .root { return "the root cannot be deleted" }
        if entry.state.parent == entry.id { return "entry \(entry.id) is its own parent" }
        do {
            try EntryStateRules.check(entry.state, of: entry.id)
        } catch {
            if case .invalidRequest(let reason) = error { return reason }
            return error.description
        }
        return nil
    }
}

extension Unicode.Scalar {
    /// A C0 or C1 control character, DEL included (Unicode's category `Cc`). ASCII is answered
    /// without the Unicode tables: every entry of a feed page is checked (7 % of an attach's CPU
    /// went to the tables' lookups).
    fileprivate var isControlLike: Bool {
        if value < 0x80 { return value < 0x20 || value == 0x7F }
        return properties.generalCategory == .control
    }
}
