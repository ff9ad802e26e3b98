import Glibc
import Logging
import SyncMerge
import Synchronization

/// The merge commands this machine's owner allows (doc/SEMANTICS.md, "Merge commands are the
/// machine owner's choice"): a synced `.syncfs-rules` only names a command
/// (`merge=command:NAME`); the local, unsynced `merge-commands` file at `path` defines it
/// (`MergeCommandTable`). A name that file does not define — or a file that is missing, not
/// trusted (`TrustedConfigFile`) or inside the mount — runs nothing: the merge keeps both.
///
/// The file is read again at each merge that needs it (an edit takes effect without a remount).
/// Each distinct problem is logged once, not once per merge or round.
public final class LocalMergeCommands: Sendable {
    /// The file; nil: none (no command is allowed).
    public let path: String?
    /// The mount point: a file inside it is never trusted (every token holder writes there).
    let mountpoint: String?
    /// The daemon's user: the file must be this user's or root's.
    let daemonUID: uid_t
    private let logged = Mutex<Set<String>>([])

    /// No command allowed.
    public static let none = LocalMergeCommands(path: nil, mountpoint: nil)

    public init(path: String?, mountpoint: String?, daemonUID: uid_t = geteuid()) {
        self.path = path
        self.mountpoint = mountpoint
        self.daemonUID = daemonUID
    }

    /// The default file: `/etc/syncfs/merge-commands` for root; else
    /// `$XDG_CONFIG_HOME/syncfs/merge-commands` (an absolute `XDG_CONFIG_HOME`), or
    /// `~/.config/syncfs/merge-commands`; nil without a home.
    public static func defaultPath(euid: uid_t = geteuid(), environment: [String: String]) -> String? {
        if euid == 0 { return "/etc/syncfs/merge-commands" }
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return config + "/syncfs/merge-commands"
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.config/syncfs/merge-commands"
    }

    /// What a rule's `merge=command:NAME` gets.
    enum Lookup: Equatable {
        case allowed(MergeCommandTable.Definition)
        /// Not allowed here: why (for the conflict's reason and the log).
        case refused(String)
    }

    func lookup(_ name: String, logger: Logger) -> Lookup {
        guard MergeCommandTable.isValidName(name[...]) else {
            return .refused("a rule must name a command (merge=command:NAME) that this machine defines")
        }
        guard let path else { return .refused("no merge-commands file is configured") }
        switch TrustedConfigFile.read(path, owner: daemonUID, outside: mountpoint) {
        case .missing:
            return .refused("\(path) does not exist")
        case .untrusted(let why):
            once("untrusted \(why)") { logger.warning("\(path) is ignored, no merge command runs: \(why)") }
            return .refused("\(path) is ignored (\(why))")
        case .trusted(let bytes):
            let table = MergeCommandTable(parsing: String(decoding: bytes, as: UTF8.self))
            for problem in table.problems {
                once("problem \(problem)") { logger.warning("\(path) line \(problem.line): \(problem.message)") }
            }
            guard let definition = table.definitions[name] else { return .refused("\(path) does not define it") }
            return .allowed(definition)
        }
    }

    /// Checks the file at mount time (for `--merge-commands`): nil when it is trusted and every
    /// line parses, else what is wrong.
    public func problem() -> String? {
        guard let path else { return nil }
        switch TrustedConfigFile.read(path, owner: daemonUID, outside: mountpoint) {
        case .missing: return "\(path) does not exist"
        case .untrusted(let why): return why
        case .trusted(let bytes):
            let table = MergeCommandTable(parsing: String(decoding: bytes, as: UTF8.self))
            return table.problems.first.map { "\(path) line \($0.line): \($0.message)" }
        }
    }

    /// Runs `body` the first time `key` is seen.
    func once(_ key: String, _ body: () -> Void) {
        if logged.withLock({ $0.insert(key).inserted }) { body() }
    }
}
