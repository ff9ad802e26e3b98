import Foundation
import Glibc

extension StateDirectory {
    /// Where default state directories live (`defaultPath` adds `syncfs/<name>-<hash>`):
    ///
    /// - `$XDG_STATE_HOME` when set;
    /// - for root, `/var/lib`: a mount made at boot (fstab, a system unit) has no HOME or HOME=/,
    ///   and a root shell has HOME=/root; both must find the same state, so root's default does
    ///   not depend on HOME at all;
    /// - otherwise `$HOME/.local/state` (the home directory from the password database when HOME
    ///   is unset or `/`).
    static func defaultBase(environment: [String: String], euid: uid_t = geteuid()) -> String {
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return state }
        if euid == 0 { return "/var/lib" }
        return homeDirectory(environment: environment) + "/.local/state"
    }

    /// The device key of this user on this machine, for sealed containers:
    /// `<default base>/syncfs/device-key` (`defaultBase`), mode 0600.
    public static func deviceKeyPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        defaultBase(environment: environment) + "/syncfs/device-key"
    }

    /// Root's state directories before `/var/lib` was its default (`~root/.local/state`): a state
    /// directory found there (with its queue) keeps being used.
    static func legacyRootBase(environment: [String: String], euid: uid_t = geteuid()) -> String? {
        guard euid == 0, environment["XDG_STATE_HOME"].map({ $0.isEmpty }) ?? true else { return nil }
        return homeDirectory(environment: environment) + "/.local/state"
    }

    private static func homeDirectory(environment: [String: String]) -> String {
        if let home = environment["HOME"], !home.isEmpty, home != "/" { return home }
        if let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir {
            let home = String(cString: directory)
            if !home.isEmpty && home != "/" { return home }
        }
        return NSHomeDirectory()
    }
}
