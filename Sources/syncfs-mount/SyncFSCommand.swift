import ArgumentParser
import Glibc
import SyncFS

/// `syncfs-mount`: a thin command tree. Each subcommand parses, composes, and hands over to
/// the SyncFS library; exit codes are documented in doc/CLI.md.
@main
struct SyncFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncfs-mount",
        abstract: "A synced folder: mount a SyncFS container as an ordinary directory.",
        discussion: "Exit codes: 0 ok, 1 internal error, 64 usage, 65 bad input, 69 FUSE unavailable, "
            + "73 cannot create, 75 busy, 77 permission denied (see doc/CLI.md).",
        version: SyncFSVersion.current,
        subcommands: [
            InitCommand.self, MountCommand.self, ListCommand.self, UnmountCommand.self, SyncCommand.self,
            StatusCommand.self, PinCommand.self, UnpinCommand.self, EvictCommand.self, DownloadCommand.self,
            ConflictsCommand.self, ResolveCommand.self, EventsCommand.self, ServeCommand.self,
            ServerInitCommand.self, TokenCommand.self, ContainerCommand.self, ManualCommand.self,
            RecoverCommand.self, ReleaseCommand.self, DiscardCommand.self, VersionsCommand.self,
            TrashCommand.self, RestoreCommand.self, VerifyCommand.self, LimitCommand.self,
            ExcludeCommand.self, IncludeCommand.self,
            PauseCommand.self, ResumeCommand.self, UserCommand.self, MemberCommand.self, DeviceCommand.self,
            LinkCommand.self, EncryptionCommand.self, RekeyCommand.self,
            AuditCommand.self, LoginCommand.self,
        ]
    )

    /// Called as `mount.fuse.syncfs` (mount(8)'s helper), the arguments follow mount's convention.
    static func main() {
        if let argv0 = CommandLine.arguments.first, MountHelperInvocation.isHelper(argv0) {
            MountHelperInvocation.runAndExit(CommandLine.arguments)
        }
        if let unknown = UnknownCommand.message(Array(CommandLine.arguments.dropFirst()), root: Self.self) {
            printError("syncfs-mount: \(unknown)")
            Glibc.exit(ExitCode(.usage).rawValue)
        }
        main(nil)
    }

    /// No subcommand: the usage on standard error, exit 64 (a script that forgot the
    /// subcommand must not read as success).
    func run() throws {
        printError(Self.helpMessage())
        throw ExitCode(.usage)
    }
}

/// Prints `error` on standard error and exits with its documented code.
func fail(_ error: MountError) -> ExitCode {
    printError("syncfs-mount: \(error.description)")
    return ExitCode(error.exitStatus)
}

func printError(_ message: String) {
    var standardError = StandardError()
    print(message, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var bytes = Array(string.utf8)
        _ = bytes.withUnsafeMutableBytes { fwriteStderr($0.baseAddress!, $0.count) }
    }
}
