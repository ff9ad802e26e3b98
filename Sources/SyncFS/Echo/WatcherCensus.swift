import Glibc
import Synchronization

/// Whether any process could be watching the mount with inotify or fanotify: the question that
/// lets a burst of remote changes skip the echo (`RemoteEcho`, doc/decisions/033).
///
/// A look reads every process's descriptors under `/proc` (descriptor-relative calls from one
/// descriptor of `/proc`): an inotify or fanotify descriptor with a mark on the mount's
/// filesystem (its `sdev` in `/proc/PID/fdinfo/N`) or on the mount itself (a fanotify mount mark's
/// `mnt_id`) is a watcher. The answer errs towards "watched":
/// - a process whose descriptors cannot be read counts as a watcher unless it cannot reach the
///   mount at all (without `allow_other`, the kernel lets only processes whose real, effective and
///   saved user IDs are all the mount owner's use it);
/// - a mount that cannot be found in `/proc/self/mountinfo`, or a `/proc` that cannot be read,
///   counts as watched.
///
/// A look is kept for `maximumAge`: a watch added within that time before a change may miss that
/// change's event (the decision record says why that is accepted for bursts only).
final class WatcherCensus: Sendable {
    /// The mount as the kernel names it in `fdinfo` and `mountinfo`.
    struct MountIdentity: Equatable, Sendable {
        var mountID: UInt64
        var major: UInt32
        var minor: UInt32
    }

    private struct Look {
        var at: ContinuousClock.Instant
        var watched: Bool
    }

    let mountpoint: String
    let maximumAge: Duration
    private let ownerUID: uid_t
    private let othersMayEnter: Bool
    private let last = Mutex<Look?>(nil)
    private let identity = Mutex<MountIdentity?>(nil)

    /// `othersMayEnter`: the mount has `allow_other` (root's mounts always do).
    init(mountpoint: String, othersMayEnter: Bool, maximumAge: Duration = .milliseconds(100)) {
        self.mountpoint = mountpoint
        self.maximumAge = maximumAge
        self.othersMayEnter = othersMayEnter || geteuid() == 0
        ownerUID = geteuid()
    }

    /// True if a process may be watching the mount, from a look at most `maximumAge` old.
    func mayBeWatched() -> Bool {
        let now = ContinuousClock.now
        if let look = last.withLock({ $0 }), now - look.at < maximumAge { return look.watched }
        let watched = look()
        last.withLock { $0 = Look(at: .now, watched: watched) }
        return watched
    }

    /// Looks now.
    func look() -> Bool {
        guard let mount = mountIdentity() else { return true }
        return look(at: mount)
    }

    /// Looks now for marks on `mount` (the daemon's own descriptors included).
    func look(at mount: MountIdentity) -> Bool {
        let proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard proc >= 0 else { return true }
        defer { close(proc) }
        guard let processes = fdopendir(dup(proc)) else { return true }
        defer { closedir(processes) }
        while let entry = readdir(processes) {
            let name = entry.entryName
            guard Int32(name) != nil else { continue }
            if processWatches(pid: name, in: proc, mount: mount) { return true }
        }
        return false
    }

    /// Whether the process `/proc/<pid>` may watch the mount.
    private func processWatches(pid: String, in proc: Int32, mount: MountIdentity) -> Bool {
        let process = openat(proc, pid, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard process >= 0 else { return false }  // gone
        defer { close(process) }
        let descriptors = openat(process, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptors >= 0 else {
            if errno == ENOENT || errno == ESRCH { return false }
            return mayEnterMount(process: process)
        }
        guard let listing = fdopendir(descriptors) else {
            close(descriptors)
            return mayEnterMount(process: process)
        }
        defer { closedir(listing) }
        var target = [CChar](repeating: 0, count: 64)
        while let entry = readdir(listing) {
            let name = entry.entryName
            guard name.first != "." else { continue }
            let length = readlinkat(descriptors, name, &target, target.count)
            guard length > 0 else { continue }
            let link = target[..<length].map { UInt8(bitPattern: $0) }
            guard link == Self.inotifyLink || link == Self.fanotifyLink else { continue }
            guard let info = Self.read(at: process, path: "fdinfo/" + name) else {
                if errno == ENOENT { continue }  // closed meanwhile
                return mayEnterMount(process: process)
            }
            if Self.marks(info, reach: mount) { return true }
        }
        return false
    }

    /// A process whose descriptors cannot be read: a watcher unless the kernel keeps it out of
    /// the mount (`/proc/PID/status`'s user IDs; an unreadable status counts as a watcher).
    private func mayEnterMount(process: Int32) -> Bool {
        Self.mayEnter(status: othersMayEnter ? nil : Self.read(at: process, path: "status"), owner: ownerUID)
    }

    /// Whether a process whose descriptors cannot be read may enter a mount of `owner` without
    /// `allow_other`, from its `/proc/PID/status` (nil: unreadable, or the mount lets others in).
    static func mayEnter(status: String?, owner: uid_t) -> Bool {
        guard let status, let ids = userIDs(inStatus: status) else { return true }
        // The kernel's check (`fuse_allow_current_process`): real, effective and saved user IDs.
        return ids.prefix(3).allSatisfy { $0 == owner }
    }

    private func mountIdentity() -> MountIdentity? {
        if let known = identity.withLock({ $0 }) { return known }
        guard let text = Self.read(path: "/proc/self/mountinfo"),
            let found = Self.identity(of: mountpoint, inMountinfo: text)
        else { return nil }
        identity.withLock { $0 = found }
        return found
    }

    // MARK: Reading /proc's texts (static: tested on their own)

    /// What `/proc/PID/fd/N` links to for an inotify and a fanotify descriptor.
    private static let inotifyLink = Array("anon_inode:inotify".utf8)
    private static let fanotifyLink = Array("anon_inode:[fanotify]".utf8)

    /// True if an `fdinfo` text holds an inotify or fanotify mark on `mount`'s filesystem, or a
    /// fanotify mark on the mount itself.
    static func marks(_ fdinfo: String, reach mount: MountIdentity) -> Bool {
        for line in fdinfo.split(separator: "\n") {
            guard line.hasPrefix("inotify ") || line.hasPrefix("fanotify ") else { continue }
            for field in line.split(separator: " ") {
                if field.hasPrefix("sdev:"), let device = UInt64(field.dropFirst(5), radix: 16) {
                    // The kernel's own dev_t: 12 bits of major above 20 bits of minor.
                    if device >> 20 == UInt64(mount.major) && device & 0xFFFFF == UInt64(mount.minor) { return true }
                }
                if field.hasPrefix("mnt_id:"), let id = UInt64(field.dropFirst(7), radix: 16), id == mount.mountID {
                    return true
                }
            }
        }
        return false
    }

    /// The last mount at `mountpoint` in a `mountinfo` text (the one on top), nil if none.
    static func identity(of mountpoint: String, inMountinfo text: String) -> MountIdentity? {
        var found: MountIdentity?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 4, unescape(fields[4]) == mountpoint else { continue }
            let device = fields[2].split(separator: ":")
            guard let id = UInt64(fields[0]), device.count == 2, let major = UInt32(device[0]),
                let minor = UInt32(device[1])
            else { continue }
            found = MountIdentity(mountID: id, major: major, minor: minor)
        }
        return found
    }

    /// The real, effective, saved and filesystem user IDs of a `/proc/PID/status` text.
    static func userIDs(inStatus text: String) -> [uid_t]? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") }) else { return nil }
        let ids = line.dropFirst(4).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { uid_t($0) }
        return ids.count == 4 ? ids : nil
    }

    /// `mountinfo` writes space, tab, newline and backslash in paths as `\ooo`.
    private static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.first {
            if byte == UInt8(ascii: "\\"), utf8.count >= 4,
                let value = UInt8(String(decoding: utf8.dropFirst().prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(4)
            } else {
                bytes.append(byte)
                utf8 = utf8.dropFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func read(path: String) -> String? {
        read(at: AT_FDCWD, path: path)
    }

    /// A small `/proc` text, read whole (nil with `errno` set if it cannot be).
    private static func read(at directory: Int32, path: String) -> String? {
        let fd = openat(directory, path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
