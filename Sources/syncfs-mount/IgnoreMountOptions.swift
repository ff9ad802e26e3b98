import ArgumentParser
import Foundation
import SyncFS

/// The mount options of ignore patterns (doc/CLI.md, `mount`; doc/SEMANTICS.md, "Ignored paths
/// on a mount").
struct IgnoreMountOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "This mount's local ignore file (gitignore syntax, never synced; its `!` lines override synced ones).",
            discussion:
                "Default: /etc/syncfs/ignore for root, else $XDG_CONFIG_HOME/syncfs/ignore (or ~/.config/…).",
            valueName: "file"))
    var ignoreFile: String?

    @Flag(help: "Do not ignore the built-in temporary files of editors and office suites.")
    var noDefaultIgnores = false

    @Flag(help: "Do not use the synced .syncfs-ignore files (only the local ignore file and the defaults).")
    var noSyncedIgnores = false

    /// The options for the daemon; `absolute` makes a given path absolute.
    func options(absolute: (String) -> String) -> IgnoreOptions {
        var options = IgnoreOptions()
        options.defaults = !noDefaultIgnores
        options.synced = !noSyncedIgnores
        options.fileGiven = ignoreFile != nil
        options.file =
            ignoreFile.map(absolute) ?? IgnoreOptions.defaultPath(environment: ProcessInfo.processInfo.environment)
        return options
    }

    /// The options again, for the daemon's command line (`file`: the absolute given file).
    func commandLine(file: String?) -> [String] {
        var arguments: [String] = []
        if ignoreFile != nil, let file { arguments += ["--ignore-file", file] }
        if noDefaultIgnores { arguments.append("--no-default-ignores") }
        if noSyncedIgnores { arguments.append("--no-synced-ignores") }
        return arguments
    }
}
