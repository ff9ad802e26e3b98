import Foundation
import Glibc

/// A state directory that holds changes no mount is uploading (doc/CLI.md, "`syncfs-mount list`").
public struct WaitingStateDirectory: Codable, Sendable, Equatable {
    public var stateDirectory: String
    /// The container it belongs to, as its last mount named it.
    public var container: String
    /// That container's ID, as recorded.
    public var containerID: String?
    /// Its last mount point, if recorded (mounts before this release did not record it).
    public var mountpoint: String?
    /// Changes queued for upload.
    public var queued: Int
    /// The command that mounts it again and uploads them.
    public var resume: String
}

/// Finds the state directories under the default root (`StateDirectory.defaultRoot`) that still
/// hold queued changes while no daemon uses them.
///
/// Trust: everything is opened below directory descriptors with `O_NOFOLLOW`, and only what this
/// user owns is read. The root itself must be a real directory of this user that no one else can
/// write; each state directory must be a real directory of this user (a symlink or another
/// user's directory planted in the root is skipped and never read); its `state.db` must be a
/// regular file of this user. The database is read with `SQLiteReadOnly` (no write, no create,
/// no lock a daemon waits for). A state directory whose `lock` a process holds is live and
/// skipped (its mount lists itself); /proc/locks is read for that, so no lock is taken.
public enum StateDirectoryScan {
    public struct Result: Sendable {
        public var waiting: [WaitingStateDirectory] = []
        /// Entries not read, and why (a symlink, another user's, …), for a warning.
        public var skipped: [String] = []
    }

    public static func scan(root: String = StateDirectory.defaultRoot) -> Result {
        var result = Result()
        let rootFD = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard rootFD >= 0 else {
            if errno != ENOENT {
                result.skipped.append("\(root): not a directory of yours (\(String(cString: strerror(errno))))")
            }
            return result
        }
        defer { close(rootFD) }
        var info = stat()
        guard fstat(rootFD, &info) == 0 else { return result }
        guard info.st_uid == geteuid() else {
            result.skipped.append("\(root): belongs to uid \(info.st_uid), not to you; not reading it")
            return result
        }
        guard info.st_mode & 0o022 == 0 else {
            result.skipped.append(
                "\(root): group or others can write to it (mode 0\(String(info.st_mode & 0o777, radix: 8))); "
                    + "not reading it (chmod 700 it)")
            return result
        }
        let held = heldFlocks()
        for name in entryNames(rootFD) {
            switch inspect(rootFD: rootFD, root: root, name: name, held: held) {
            case .waiting(let entry): result.waiting.append(entry)
            case .skipped(let reason): result.skipped.append("\(root)/\(name): \(reason)")
            case .nothing: break
            }
        }
        result.waiting.sort { $0.stateDirectory < $1.stateDirectory }
        return result
    }

    private enum Finding {
        case waiting(WaitingStateDirectory)
        case skipped(String)
        case nothing
    }

    private static func inspect(rootFD: Int32, root: String, name: String, held: Set<DeviceInode>) -> Finding {
        var info = stat()
        guard fstatat(rootFD, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return .nothing }
        if info.st_mode & S_IFMT == S_IFLNK { return .skipped("a symlink; not followed") }
        guard info.st_mode & S_IFMT == S_IFDIR else { return .nothing }
        // O_NOFOLLOW again: the name may have been replaced since.
        let directoryFD = openat(rootFD, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard directoryFD >= 0 else {
            return errno == ELOOP || errno == ENOTDIR ? .skipped("not a directory (a symlink?); not read") : .nothing
        }
        defer { close(directoryFD) }
        guard fstat(directoryFD, &info) == 0 else { return .nothing }
        guard info.st_uid == geteuid() else { return .skipped("belongs to uid \(info.st_uid); not read") }
        guard fstatat(directoryFD, "state.db", &info, AT_SYMLINK_NOFOLLOW) == 0 else { return .nothing }
        guard info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else {
            return .skipped("its state.db is not a regular file of yours; not read")
        }
        if fstatat(directoryFD, "lock", &info, AT_SYMLINK_NOFOLLOW) == 0,
            held.contains(DeviceInode(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)))
        {
            return .nothing
        }
        // The directory as this descriptor holds it: SQLite opens state.db (and its -wal) there.
        guard let summary = StateDatabaseReader.summary(databasePath: "/proc/self/fd/\(directoryFD)/state.db"),
            summary.queued > 0, let container = summary.fact(.container)
        else { return .nothing }
        let path = root + "/" + name
        let mountpoint = summary.fact(.mountpoint)
        return .waiting(
            WaitingStateDirectory(
                stateDirectory: path, container: container, containerID: summary.fact(.containerID),
                mountpoint: mountpoint, queued: summary.queued,
                resume: resumeCommand(
                    container: container, mountpoint: mountpoint, stateDirectory: path,
                    tokenFile: summary.fact(.tokenFile), caFile: summary.fact(.caFile))))
    }

    /// `syncfs-mount mount CONTAINER MOUNTPOINT --state-dir DIR` (plus `--token-file FILE` and
    /// `--ca-file FILE` for a server), each part quoted for a POSIX shell; an unknown mount point
    /// reads `MOUNTPOINT`.
    public static func resumeCommand(
        container: String, mountpoint: String?, stateDirectory: String, tokenFile: String? = nil,
        caFile: String? = nil
    ) -> String {
        "syncfs-mount mount \(shellQuoted(container)) \(mountpoint.map(shellQuoted) ?? "MOUNTPOINT") "
            + "--state-dir \(shellQuoted(stateDirectory))"
            + (tokenFile.map { " --token-file \(shellQuoted($0))" } ?? "")
            + (caFile.map { " --ca-file \(shellQuoted($0))" } ?? "")
    }

    /// `text` as one shell word: unchanged if it needs no quoting, else in single quotes.
    static func shellQuoted(_ text: String) -> String {
        let plain = text.unicodeScalars.allSatisfy {
            ($0.isASCII && (CharacterSet.alphanumerics.contains($0) || "/._-+:,@%=".unicodeScalars.contains($0)))
        }
        if plain && !text.isEmpty { return text }
        return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    static func entryNames(_ directoryFD: Int32) -> [String] {
        let copy = dup(directoryFD)
        guard copy >= 0, let directory = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = entry.entryName
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    struct DeviceInode: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// The files some process holds a `flock` on (`flockHolders`).
    static func heldFlocks() -> Set<DeviceInode> { Set(flockHolders().keys) }

    /// The files some process holds a `flock` on, each with that process's PID, from /proc/locks
    /// ("1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF", MAJ and MIN in hex). Reading it takes
    /// no lock. The file is read with one large `read` where it fits: /proc/locks is made a
    /// buffer at a time, and a lock list that changes between two reads (SQLite's locks come and
    /// go all the time on a busy machine) can skip lines of the next buffer.
    static func flockHolders() -> [DeviceInode: Int32] {
        guard let text = procLocks() else { return [:] }
        var held: [DeviceInode: Int32] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // A process waiting for the lock has a line too ("1: -> FLOCK …"): not the holder.
            guard let kind = fields.firstIndex(of: "FLOCK"), kind > 0, fields[kind - 1] != "->", fields.count > kind + 4
            else { continue }
            let parts = fields[kind + 4].split(separator: ":")
            guard parts.count == 3, let major = UInt64(parts[0], radix: 16), let minor = UInt64(parts[1], radix: 16),
                let inode = UInt64(parts[2]), let pid = Int32(fields[kind + 3])
            else { continue }
            // glibc's makedev.
            let device =
                ((major & 0x0000_0fff) << 8) | ((major & 0xffff_f000) << 32) | (minor & 0x0000_00ff)
                | ((minor & 0xffff_ff00) << 12)
            held[DeviceInode(device: device, inode: inode)] = pid
        }
        return held
    }

    /// /proc/locks, read in reads of 4 MiB.
    private static func procLocks() -> String? {
        let fd = open("/proc/locks", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
