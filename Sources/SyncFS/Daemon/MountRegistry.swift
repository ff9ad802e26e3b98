import Foundation
import Glibc
import SyncBackend

/// Where a running daemon says which mount point it serves and answers on its control socket:
/// `RUNTIME/mounts/<hash>.pid` and `RUNTIME/mounts/<hash>.sock`, where RUNTIME is
/// `$XDG_RUNTIME_DIR/syncfs`, else `/run/syncfs` for root, else `/tmp/syncfs-UID`.
///
/// Trust (doc/CLI.md, "The runtime directory"): RUNTIME and RUNTIME/mounts must be real
/// directories (not symlinks) with mode 0700. The daemon creates them so, tightens its own, and
/// refuses to mount with one owned by another user (who could serve a fake socket). The CLI
/// checks the same before it reads a pid file or connects, accepting its own user or root as owner.
public enum MountRegistry {
    /// RUNTIME (see above), for this process's environment and effective user.
    static var runtimeDirectory: String {
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        if let runtime { return runtime + "/syncfs" }
        return geteuid() == 0 ? "/run/syncfs" : "/tmp/syncfs-\(geteuid())"
    }

    static var directory: String { runtimeDirectory + "/mounts" }

    static func file(for mountpoint: String) -> String {
        directory + "/" + String(StateDirectory.stableHash(mountpoint), radix: 16) + ".pid"
    }

    /// The daemon's control socket (see `ControlServer`).
    public static func socketPath(for mountpoint: String) -> String {
        directory + "/" + String(StateDirectory.stableHash(mountpoint), radix: 16) + ".sock"
    }

    /// The daemon's side: creates RUNTIME and RUNTIME/mounts 0700 or makes existing ones private;
    /// throws if either is a symlink, not a directory, or another user's.
    static func prepare() throws(MountError) {
        do throws(PrivateFiles.Refusal) {
            for path in [runtimeDirectory, directory] {
                try PrivateFiles.directory(path, ownership: .mine, followSymlink: false)
            }
        } catch {
            throw MountError(
                .permissionDenied,
                "unsafe runtime directory for the control socket: \(error) "
                    + "(or set XDG_RUNTIME_DIR to a directory of your own)")
        }
    }

    /// Why the CLI will not use the registry.
    public enum ClientCheck: Sendable, Equatable {
        /// Safe to use.
        case safe
        /// No registry: no daemon of this user runs.
        case missing
        /// Exists but could have been planted by another user; the reason says which and how to fix.
        case unsafe(String)
    }

    /// The CLI's side: RUNTIME and RUNTIME/mounts must be directories (not symlinks), owned by
    /// this user or root, with no group/other access. Nothing is created or changed.
    public static func checkForClient() -> ClientCheck {
        let me = geteuid()
        for path in [runtimeDirectory, directory] {
            var info = stat()
            guard lstat(path, &info) == 0 else {
                return errno == ENOENT
                    ? .missing : .unsafe("cannot inspect \(path): \(String(cString: strerror(errno)))")
            }
            let problem: String?
            if info.st_mode & S_IFMT != S_IFDIR {
                problem = "is not a directory (or is a symlink)"
            } else if info.st_uid != me && info.st_uid != 0 {
                problem = "belongs to uid \(info.st_uid), not to uid \(me) or root"
            } else if info.st_mode & PrivateFiles.groupOrOther != 0 {
                problem = "has mode 0\(String(info.st_mode & 0o777, radix: 8)), open to other users"
            } else {
                problem = nil
            }
            if let problem {
                return .unsafe(
                    "the SyncFS runtime directory \(path) \(problem); not trusting it (remove it, or set "
                        + "XDG_RUNTIME_DIR to a directory of your own, then mount again)")
            }
        }
        return .safe
    }

    /// Writes this daemon's pid file (0600, replaced atomically). Call after `prepare`.
    static func register(mountpoint: String) {
        let target = file(for: mountpoint)
        let temporary = target + ".tmp-\(getpid())"
        unlink(temporary)
        if PrivateFiles.createFile(temporary, Array("\(getpid())\n".utf8)) == nil {
            rename(temporary, target)
        } else {
            unlink(temporary)
        }
    }

    static func unregister(mountpoint: String) {
        unlink(file(for: mountpoint))
    }

    /// The pid of the daemon serving `mountpoint`, if one registered in a safe registry and is
    /// still alive.
    public static func daemon(of mountpoint: String) -> pid_t? {
        guard checkForClient() == .safe,
            let text = try? String(contentsOfFile: file(for: mountpoint), encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), kill(pid, 0) == 0
        else { return nil }
        return pid
    }
}
