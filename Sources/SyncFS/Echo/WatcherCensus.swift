import Foundation
import Glibc
import SyncBackend
import Synchronization

/// Whether any process could be watching the mount with inotify or fanotify: the question that
/// lets a burst of remote changes skip the echo (`RemoteEcho`, decision 033).
///
/// A look reads every process's descriptors under `/proc` (descriptor-relative calls below one
/// directory descriptor of `/proc`): an inotify or fanotify descriptor with a mark on the mount's
/// filesystem (its `sdev` in `/proc/PID/fdinfo/N`) or on the mount itself (a fanotify mount mark's
/// `mnt_id`) is a watcher. What a look cannot see:
/// - the descriptors of a process the daemon may not inspect (a non-dumpable one such as
///   `ssh-agent`; without `CAP_SYS_PTRACE`, another user's): such a process is *not* counted,
///   and the look names those that may enter the mount (`Finding.uninspected`) for the log —
///   counting them would turn the echo on for every burst on most machines, for programs that do
///   not watch folders; `mount --inotify-echo-always` is the way for one that does;
/// - everything, for a daemon without root on a mount with `allow_other` (other users' processes
///   are unreadable and may be hidden by `hidepid`): then every look answers "watched", as does a
///   mount missing from `/proc/self/mountinfo` or a `/proc` that cannot be read.
///
/// A look is kept for `maximumAge` from its start: a watch added within that time before a change
/// may miss that change's event (the decision record says why that is accepted for bursts only).
final class WatcherCensus: Sendable {
    /// The mount as the kernel names it in `fdinfo` and `mountinfo`.
    struct MountIdentity: Equatable, Sendable {
        var mountID: UInt64
        var major: UInt32
        var minor: UInt32
    }

    /// What a look found.
    struct Finding: Equatable, Sendable {
        var watched: Bool
        /// Processes that may enter the mount and whose descriptors could not be read
        /// ("PID (name)"), up to `uninspectedShown`.
        var uninspected: [String] = []
    }

    static let uninspectedShown = 5

    private struct Look {
        var at: ContinuousClock.Instant
        var finding: Finding
    }

    let mountpoint: String
    let maximumAge: Duration
    private let ownerUID: uid_t
    private let othersMayEnter: Bool
    /// Without root, `allow_other` lets in processes this one cannot inspect or even list.
    private let othersUnseen: Bool
    private let last = Mutex<Look?>(nil)
    private let identity = Mutex<MountIdentity?>(nil)

    /// `othersMayEnter`: the mount has `allow_other` (root's mounts always do).
    init(mountpoint: String, othersMayEnter: Bool, maximumAge: Duration = .milliseconds(100)) {
        self.mountpoint = mountpoint
        self.maximumAge = maximumAge
        self.othersMayEnter = othersMayEnter || geteuid() == 0
        othersUnseen = othersMayEnter && geteuid() != 0
        ownerUID = geteuid()
    }

    /// What a look at most `maximumAge` old found.
    func finding() -> Finding {
        let now = ContinuousClock.now
        if let look = last.withLock({ $0 }), now - look.at < maximumAge { return look.finding }
        let finding = look()
        // Dated from its start: a watch added during the look may have been missed.
        last.withLock { $0 = Look(at: now, finding: finding) }
        return finding
    }

    /// Looks now.
    func look() -> Finding {
        guard !othersUnseen, let mount = mountIdentity() else { return Finding(watched: true) }
        return look(at: mount)
    }

    /// Looks now for marks on `mount` (the daemon's own descriptors included).
    func look(at mount: MountIdentity) -> Finding {
        guard let processes = opendir("/proc") else { return Finding(watched: true) }
        defer { closedir(processes) }
        let proc = dirfd(processes)
        var finding = Finding(watched: false)
        while let entry = readdir(processes) {
            let name = entry.entryName
            guard Int32(name) != nil else { continue }
            switch inspect(pid: name, in: proc, mount: mount) {
            case .watches: return Finding(watched: true)
            case .clear: break
            case .uninspected(let shown):
                if let shown, finding.uninspected.count < Self.uninspectedShown { finding.uninspected.append(shown) }
            }
        }
        return finding
    }

    private enum Inspection {
        case watches
        case clear
        /// The descriptors could not be read: the process as the log names it, nil if it cannot
        /// enter the mount anyway.
        case uninspected(String?)
    }

    /// What the process `/proc/<pid>` holds.
    private func inspect(pid: String, in proc: Int32, mount: MountIdentity) -> Inspection {
        let process = openat(proc, pid, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard process >= 0 else {
            return errno == ENOENT || errno == ESRCH ? .clear : .uninspected("\(pid) (hidden)")
        }
        defer { close(process) }
        let descriptors = openat(process, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptors >= 0 else {
            return errno == ENOENT || errno == ESRCH ? .clear : uninspected(pid, process)
        }
        guard let listing = fdopendir(descriptors) else {
            close(descriptors)
            return uninspected(pid, process)
        }
        defer { closedir(listing) }
        var target = [CChar](repeating: 0, count: 64)
        while let entry = readdir(listing) {
            let name = entry.entryName
            guard name.first != "." else { continue }
            let length = readlinkat(descriptors, name, &target, target.count)
            guard length > 0 else {
                // Closed meanwhile, or no ptrace access (a non-dumpable process).
                if length < 0 && errno != ENOENT { return uninspected(pid, process) }
                continue
            }
            let link = target[..<length].map { UInt8(bitPattern: $0) }
            guard link == Self.inotifyLink || link == Self.fanotifyLink else { continue }
            switch LocalFileIO.readAll(at: process, "fdinfo/" + name) {
            case .success(let info):
                if Self.marks(String(decoding: info, as: UTF8.self), reach: mount) { return .watches }
            case .failure(let error): if error.code != ENOENT { return uninspected(pid, process) }  // else closed
            }
        }
        return .clear
    }

    /// A process whose descriptors cannot be read, named for the log if it may enter the mount.
    private func uninspected(_ pid: String, _ process: Int32) -> Inspection {
        let status = Self.text(at: process, path: "status")
        guard othersMayEnter || Self.mayEnter(status: status, owner: ownerUID) else { return .uninspected(nil) }
        let name =
            status?.split(separator: "\n").first { $0.hasPrefix("Name:") }
            .map { $0.dropFirst(5).trimmingCharacters(in: .whitespaces) } ?? "?"
        return .uninspected("\(pid) (\(LogText.line(name)))")
    }

    /// Whether a process may enter a mount of `owner` without `allow_other`, from its
    /// `/proc/PID/status` (nil: unreadable, which counts as may).
    static func mayEnter(status: String?, owner: uid_t) -> Bool {
        guard let status, let ids = userIDs(inStatus: status) else { return true }
        // The kernel's check (`fuse_allow_current_process`): real, effective and saved user IDs.
        return ids.prefix(3).allSatisfy { $0 == owner }
    }

    private func mountIdentity() -> MountIdentity? {
        if let known = identity.withLock({ $0 }) { return known }
        guard let text = Self.text(path: "/proc/self/mountinfo"),
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

    /// A `/proc` text below `directory`; nil if it cannot be read.
    private static func text(at directory: Int32 = AT_FDCWD, path: String) -> String? {
        guard case .success(let bytes) = LocalFileIO.readAll(at: directory, path) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
