import Glibc
import Logging
import SyncMerge

/// What a mount ignores (doc/SEMANTICS.md, "Ignored paths on a mount"): `--no-default-ignores`,
/// `--no-synced-ignores`, and the local ignore file (`--ignore-file`, or `defaultPath`), never
/// synced and trusted as the merge-commands file is (`TrustedConfigFile`: the daemon's user's or
/// root's, not writable by others, not inside the mount).
public struct IgnoreOptions: Sendable, Equatable {
    /// The built-in patterns of editors' and office suites' temporary files.
    public var defaults = true
    /// The synced `.syncfs-ignore` files.
    public var synced = true
    /// The local ignore file; nil: none.
    public var file: String?
    /// `file` was given (`--ignore-file`): a missing one fails the mount, where a missing default
    /// one is simply not used. An untrusted file fails the mount either way.
    public var fileGiven = false

    public init() {}

    /// The default file: `/etc/syncfs/ignore` for root; else `$XDG_CONFIG_HOME/syncfs/ignore`
    /// (an absolute `XDG_CONFIG_HOME`), or `~/.config/syncfs/ignore`; nil without a home.
    public static func defaultPath(euid: uid_t = geteuid(), environment: [String: String]) -> String? {
        if euid == 0 { return "/etc/syncfs/ignore" }
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/syncfs/ignore" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.config/syncfs/ignore"
    }

    /// The local file as the mount uses it: its text, nil if there is none to use, or (a given
    /// file) why it cannot be used.
    public func readLocalFile(mountpoint: String, owner: uid_t = geteuid()) -> Result<String?, IgnoreFileProblem> {
        guard let file else { return .success(nil) }
        switch TrustedConfigFile.read(file, owner: owner, outside: mountpoint) {
        case .missing: return fileGiven ? .failure(IgnoreFileProblem("\(file) does not exist")) : .success(nil)
        case .untrusted(let why):
            // Unlike a missing one, an untrusted default file fails too: mounting without the
            // patterns it names would upload what the user said stays here.
            let which = fileGiven ? file : "\(file) (the default local ignore file)"
            return .failure(IgnoreFileProblem("\(which) is not trusted: \(why); fix its owner and modes, or remove it"))
        case .trusted(let bytes): return .success(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// The settings the mount's ignore rules start from (the mount command has refused a file
    /// that cannot be used; one that became so since is logged and left out).
    func settings(mountpoint: String, logger: Logger) -> MountIgnores.Settings {
        var settings = MountIgnores.Settings(defaults: defaults, synced: synced, local: nil)
        switch readLocalFile(mountpoint: mountpoint) {
        case .success(let text?):
            let local = IgnoreFile(parsing: text)
            for problem in local.problems {
                logger.warning("\(file ?? "") line \(problem.line): \(problem.message) (line skipped)")
            }
            settings.local = local
            settings.localPath = file
        case .success(nil): break
        case .failure(let problem): logger.warning("the local ignore file is not used: \(problem.message)")
        }
        return settings
    }
}

/// Why a given local ignore file cannot be used.
public struct IgnoreFileProblem: Error, Sendable, Equatable {
    public var message: String
    init(_ message: String) { self.message = message }
}
