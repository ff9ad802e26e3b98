import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Who a merge command runs as, and the clean environment it gets.
///
/// A daemon running as root never runs a command as root: the command runs as the owner of the
/// file being merged, or as `nobody` when that owner is root (or unknown to the system), with no
/// supplementary groups. A daemon running as another user runs commands as itself (it cannot
/// change user). See `SpawnedShell` for how the switch is made.
public struct MergeIdentity: Equatable, Sendable {
    /// The user and group to switch to in the child; nil: stay the daemon's user.
    public var switchTo: (uid: uid_t, gid: gid_t)? {
        get { switchUID.map { ($0, switchGID) } }
        set {
            switchUID = newValue?.uid
            switchGID = newValue?.gid ?? 0
        }
    }
    private var switchUID: uid_t?
    private var switchGID: gid_t = 0
    /// The user's name and home, for `USER`, `LOGNAME`, `HOME`.
    public var userName: String
    public var home: String

    /// The daemon's own user, unchanged.
    public static func daemonUser() -> MergeIdentity {
        let entry = passwdEntry(uid: geteuid())
        var identity = MergeIdentity(userName: entry?.name ?? String(geteuid()), home: entry?.home ?? "/")
        identity.switchTo = nil
        return identity
    }

    /// The identity for merging a file owned by `fileOwner` (its uid in the mount), for a daemon
    /// whose effective user is `daemonUID`.
    public static func forMerging(fileOwner: uid_t, daemonUID: uid_t = geteuid()) -> MergeIdentity {
        guard daemonUID == 0 else { return daemonUser() }
        if fileOwner != 0, let entry = passwdEntry(uid: fileOwner) {
            var identity = MergeIdentity(userName: entry.name, home: entry.home)
            identity.switchTo = (fileOwner, entry.gid)
            return identity
        }
        return nobody()
    }

    /// `nobody` (65534:65534 when the system has no such user).
    public static func nobody() -> MergeIdentity {
        var identity = MergeIdentity(userName: "nobody", home: "/")
        var uid: uid_t = 65534
        var gid: gid_t = 65534
        if let entry = passwdEntry(name: "nobody"), entry.uid != 0 {
            uid = entry.uid
            gid = entry.gid == 0 ? 65534 : entry.gid
        }
        identity.switchTo = (uid, gid)
        return identity
    }

    init(userName: String, home: String) {
        self.userName = userName
        self.home = home
    }

    /// The environment a command gets: nothing of the daemon's (which may hold tokens) but
    /// `PATH` (a fixed system `PATH` when the user changes), `HOME`, `USER`, `LOGNAME`,
    /// `SHELL=/bin/sh`, and the locale and time zone (`LANG`, `LC_*`, `TZ`).
    public func environment(inheriting inherited: [String: String] = ProcessInfo.processInfo.environment)
        -> [String]
    {
        let systemPath = "/usr/local/bin:/usr/bin:/bin"
        var result = [
            "PATH=\(switchTo == nil ? inherited["PATH"] ?? systemPath : systemPath)", "HOME=\(home)",
            "USER=\(userName)", "LOGNAME=\(userName)", "SHELL=/bin/sh",
        ]
        for (key, value) in inherited.sorted(by: { $0.key < $1.key })
        where key == "LANG" || key == "TZ" || key.hasPrefix("LC_") {
            result.append("\(key)=\(value)")
        }
        return result
    }

    public static func == (left: MergeIdentity, right: MergeIdentity) -> Bool {
        left.switchUID == right.switchUID && left.switchGID == right.switchGID && left.userName == right.userName
            && left.home == right.home
    }

    private struct PasswdEntry {
        var name: String
        var uid: uid_t
        var gid: gid_t
        var home: String
    }

    private static func passwdEntry(uid: uid_t) -> PasswdEntry? {
        lookUp { entry, buffer, result in getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result) }
    }

    private static func passwdEntry(name: String) -> PasswdEntry? {
        lookUp { entry, buffer, result in getpwnam_r(name, &entry, buffer.baseAddress!, buffer.count, &result) }
    }

    private static func lookUp(
        _ call: (inout passwd, UnsafeMutableBufferPointer<CChar>, inout UnsafeMutablePointer<passwd>?) -> Int32
    ) -> PasswdEntry? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        return buffer.withUnsafeMutableBufferPointer { buffer in
            guard call(&entry, buffer, &result) == 0, result != nil else { return nil }
            return PasswdEntry(
                name: String(cString: entry.pw_name), uid: entry.pw_uid, gid: entry.pw_gid,
                home: entry.pw_dir.map { String(cString: $0) } ?? "/")
        }
    }
}
