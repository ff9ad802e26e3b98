import Foundation
import Glibc
import SyncBackend

/// What a running daemon publishes about its mount for `syncfs-mount list`:
/// `RUNTIME/mounts/<hash>.json` next to its pid file and control socket (see `MountRegistry`),
/// `{"pid": …, "container": …, "mountpoint": …, "stateDirectory": …}`, mode 0600, replaced
/// atomically, removed at unmount. A daemon killed with SIGKILL leaves it behind: `list` shows
/// that mount as dead, with the command that mounts it again.
public struct MountRecord: Codable, Sendable, Equatable {
    public var pid: Int32
    public var container: String
    public var mountpoint: String
    public var stateDirectory: String
    /// For a server URL: the mount's `--token-file` and `--ca-file`, if given.
    public var tokenFile: String?
    public var caFile: String?

    init(_ configuration: MountConfiguration) {
        pid = getpid()
        container = configuration.container
        mountpoint = configuration.mountpoint
        stateDirectory = configuration.stateDirectory
        tokenFile = configuration.tokenFile
        caFile = configuration.caFile
    }

    static func file(for mountpoint: String) -> String {
        MountRegistry.directory + "/" + String(StateDirectory.stableHash(mountpoint), radix: 16) + ".json"
    }

    /// Writes the record (the daemon's side; after `MountRegistry.prepare`). Best effort: a
    /// mount without a record still works, only `list` does not show it.
    func publish() {
        guard let data = try? JSONEncoder().encode(self) else { return }
        let target = Self.file(for: mountpoint)
        let temporary = target + ".tmp-\(getpid())"
        unlink(temporary)
        if PrivateFiles.createFile(temporary, Array(data)) == nil, rename(temporary, target) == 0 { return }
        unlink(temporary)
    }

    static func withdraw(mountpoint: String) {
        unlink(file(for: mountpoint))
    }

    /// Every record in this user's registry (the CLI's side). Nothing is read unless the
    /// registry passes `MountRegistry.checkForClient`; each record is opened below the
    /// registry's descriptor with `O_NOFOLLOW` and must be a small regular file of this user or
    /// root.
    public static func all() -> Result<[MountRecord], ControlFailure> {
        switch MountRegistry.checkForClient() {
        case .safe: break
        case .missing: return .success([])
        case .unsafe(let reason): return .failure(.unsafe(reason))
        }
        let directoryFD = open(MountRegistry.directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard directoryFD >= 0 else { return .success([]) }
        defer { close(directoryFD) }
        var records: [MountRecord] = []
        for name in StateDirectoryScan.entryNames(directoryFD) where name.hasSuffix(".json") {
            if let record = read(name, in: directoryFD) { records.append(record) }
        }
        return .success(records.sorted { $0.mountpoint < $1.mountpoint })
    }

    private static func read(_ name: String, in directoryFD: Int32) -> MountRecord? {
        let fd = openat(directoryFD, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() || info.st_uid == 0,
            info.st_size <= 65536
        else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        guard bytes.isEmpty || Glibc.read(fd, &bytes, bytes.count) == bytes.count else { return nil }
        return try? JSONDecoder().decode(MountRecord.self, from: Data(bytes))
    }
}
