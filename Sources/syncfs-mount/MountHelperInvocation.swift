import ArgumentParser
import Foundation
import Glibc
import SyncBackend

/// `mount.fuse.syncfs` (or `mount.syncfs`): this executable called by mount(8) as its helper for
/// the type `fuse.syncfs`, with mount's calling convention:
///
///     mount.fuse.syncfs CONTAINER MOUNTPOINT [-s] [-f] [-n] [-v] [-o OPTIONS] [-t fuse.syncfs]
///
/// It runs exactly `syncfs-mount mount CONTAINER MOUNTPOINT --OPTION…` (a background daemon; the
/// helper returns once the mount is live). Each `-o` option is the `mount` option of the same name
/// with `_` or `-` (`state_dir=DIR` is `--state-dir=DIR`, `no_inotify_echo` is `--no-inotify-echo`):
/// the names are not listed here, so the command's own parser accepts exactly the options it
/// defines, and refuses the rest (exit 64, nothing mounted). On top of those:
///
/// - `ro` / `rw`: `--read-only` or not (the last one wins); `noexec`: `--no-exec`.
/// - Ignored (mount and systemd pass them for themselves): `_netdev`, `x-*`, `comment=*`, `auto`,
///   `noauto`, `nofail`, `user` (also `user=NAME`, which mount adds for a user mount), `users`,
///   `nouser`, `owner`, `group`, `defaults`, `uhelper=*`, `helper=*`, `nosuid`,
///   `nodev`, `exec`, `async`, and the atime options (the folder keeps its own times).
/// - `suid` and `dev` are refused unless `allow_remote_setuid` is given too (which is what makes
///   the folder suid,dev): a line in fstab cannot quietly turn on what the option guards.
/// - List values: mount options cannot contain commas, so a list is written with `:`
///   (`no_download_for=updatedb:baloo_file`).
/// - Refused: `foreground`, `lifeline`, `help` (the helper must return once mounted).
struct MountHelperInvocation {
    /// What the helper was asked to do, as `syncfs-mount` arguments (`mount CONTAINER MOUNTPOINT …`).
    let arguments: [String]
    /// `-f`: everything but the mount (mount's "fake"): the options are checked, nothing else.
    let fake: Bool
    /// `-v`: print the command line that is run.
    let verbose: Bool

    /// The names this executable answers to as a mount helper.
    static let helperNames: Set<String> = ["mount.fuse.syncfs", "mount.syncfs"]

    /// A helper usage error: the message for standard error (exit 64).
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    /// True if `argv0`'s basename is one of `helperNames`.
    static func isHelper(_ argv0: String) -> Bool {
        helperNames.contains((argv0 as NSString).lastPathComponent)
    }

    /// Parses mount's calling convention (`argv` without argv[0]).
    init(helperArguments argv: [String]) throws(UsageError) {
        var positional: [String] = []
        var options: [String] = []
        var fake = false
        var verbose = false
        var index = 0
        while index < argv.count {
            let argument = argv[index]
            index += 1
            func value(_ flag: String) throws(UsageError) -> String {
                if argument.count > 2 { return String(argument.dropFirst(2)) }
                guard index < argv.count else { throw UsageError(description: "\(flag) needs a value") }
                index += 1
                return argv[index - 1]
            }
            switch argument {
            case "-s", "-n": break  // sloppy: unknown options are refused all the same; no mtab
            case "-f": fake = true
            case "-v": verbose = true
            case _ where argument.hasPrefix("-o"): options.append(try value("-o"))
            case _ where argument.hasPrefix("-t"):
                let type = try value("-t")
                guard ["fuse.syncfs", "syncfs"].contains(type) else {
                    throw UsageError(description: "-t \(type): this helper mounts only the type fuse.syncfs")
                }
            case _ where argument.hasPrefix("-") && argument.count > 1:
                throw UsageError(
                    description: "unknown argument \(argument) (usage: mount.fuse.syncfs CONTAINER MOUNTPOINT "
                        + "[-s] [-f] [-n] [-v] [-o OPTIONS] [-t fuse.syncfs])")
            default: positional.append(argument)
            }
        }
        guard positional.count == 2 else {
            throw UsageError(
                description: "expected CONTAINER and MOUNTPOINT, got \(positional.count) operand(s) "
                    + "(usage: mount.fuse.syncfs CONTAINER MOUNTPOINT [-o OPTIONS])")
        }
        self.arguments =
            ["mount", positional[0], positional[1]]
            + (try Self.translate(options.flatMap { $0.split(separator: ",").map(String.init) }))
        self.fake = fake
        self.verbose = verbose
    }

    /// Options mount(8) and systemd pass for themselves; the folder has nothing to do with them.
    private static let ignored: Set<String> = [
        "_netdev", "auto", "noauto", "nofail", "user", "users", "nouser", "owner", "group", "defaults", "nosuid",
        "uhelper", "helper",
        "nodev", "exec", "async", "atime", "noatime", "relatime", "norelatime", "strictatime", "nostrictatime",
        "lazytime", "nolazytime", "diratime", "nodiratime",
    ]

    /// `mount` options the helper must not take: it returns once the mount is live.
    private static let refused: Set<String> = [
        "foreground", "lifeline", "help", "version", "generate-completion-script", "experimental-dump-help",
    ]

    /// `-o` options (split at commas) to `mount` command-line options.
    static func translate(_ options: [String]) throws(UsageError) -> [String] {
        var readOnly = false
        var result: [String] = []
        var wantsSuidOrDev: [String] = []
        var allowsSetuid = false
        for option in options where !option.isEmpty {
            let (name, value) = split(option)
            if ignored.contains(name) || name.hasPrefix("x-") || name == "comment" { continue }
            let flag = name.replacingOccurrences(of: "_", with: "-")
            switch flag {
            case "ro", "read-only": readOnly = true
            case "rw": readOnly = false
            case "noexec": result.append("--no-exec")
            case "suid", "dev": wantsSuidOrDev.append(name)
            case _ where refused.contains(flag):
                throw UsageError(description: "-o \(name): not a mount option (the helper returns once mounted)")
            case _ where flag.hasPrefix("-") || flag.isEmpty:
                throw UsageError(description: "-o \(option): not an option name")
            default:
                if flag == "allow-remote-setuid" { allowsSetuid = true }
                guard let value else {
                    result.append("--" + flag)
                    continue
                }
                // Lists: mount options cannot hold commas, so `:` separates their items.
                let listValue = flag == "no-download-for" ? value.replacingOccurrences(of: ":", with: ",") : value
                result.append("--\(flag)=\(listValue)")
            }
            if value != nil, ["ro", "read-only", "rw", "noexec", "suid", "dev"].contains(flag) {
                throw UsageError(description: "-o \(option): \(name) takes no value")
            }
        }
        if !wantsSuidOrDev.isEmpty && !allowsSetuid {
            throw UsageError(
                description: "-o \(wantsSuidOrDev.joined(separator: ",")): a SyncFS folder is nosuid,nodev unless "
                    + "allow_remote_setuid is given too (see doc/CLI.md, \"Mounting from fstab / mount(8)\")")
        }
        if readOnly { result.append("--read-only") }
        return result
    }

    private static func split(_ option: String) -> (String, String?) {
        guard let equals = option.firstIndex(of: "=") else { return (option, nil) }
        return (String(option[..<equals]), String(option[option.index(after: equals)...]))
    }

    /// The parser's message in mount's terms: `Unknown option '--bogus-option'` names the `-o`
    /// option `bogus_option`.
    static func helperMessage(_ message: String) -> String {
        let prefix = "Unknown option '--"
        guard message.hasPrefix(prefix), let end = message.dropFirst(prefix.count).firstIndex(of: "'") else {
            return message
        }
        let flag = message[message.index(message.startIndex, offsetBy: prefix.count)..<end]
        return "unknown mount option '\(flag.replacingOccurrences(of: "-", with: "_"))' in -o "
            + "(the options are those of `syncfs-mount mount --help`, written with _ or -)"
    }

    /// Runs the helper for this process's arguments and exits: a usage error exits 64 with
    /// nothing mounted; otherwise `syncfs-mount mount …` runs as if typed.
    static func runAndExit(_ argv: [String]) -> Never {
        let name = (argv.first.map { ($0 as NSString).lastPathComponent }) ?? "mount.fuse.syncfs"
        let invocation: MountHelperInvocation
        do {
            invocation = try MountHelperInvocation(helperArguments: Array(argv.dropFirst()))
        } catch {
            printError("\(name): \(error.description)")
            Glibc.exit(ExitStatus.usage.rawValue)
        }
        if invocation.verbose { print("syncfs-mount " + invocation.arguments.joined(separator: " ")) }
        // The options are checked by the command's own parser before anything happens.
        do {
            _ = try SyncFSCommand.parseAsRoot(invocation.arguments)
        } catch {
            // Whatever the parser would rather do than mount (help, a completion script) is
            // refused too: mount(8) must never read success when nothing was mounted.
            if SyncFSCommand.exitCode(for: error) == .success {
                printError("\(name): the -o options ask for something other than a mount; nothing was mounted")
            } else {
                printError("\(name): " + helperMessage(SyncFSCommand.message(for: error)))
            }
            Glibc.exit(ExitStatus.usage.rawValue)
        }
        if invocation.fake { Glibc.exit(ExitStatus.success.rawValue) }
        SyncFSCommand.main(invocation.arguments)
        Glibc.exit(ExitStatus.success.rawValue)
    }
}
