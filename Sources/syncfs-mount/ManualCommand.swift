import ArgumentParser
import Foundation
import Glibc

/// `syncfs-mount generate-manual DIR` (hidden; `scripts/gen-man.sh`, `scripts/setup.sh`): writes
/// the man pages, one per command, generated from the command definitions themselves — the
/// JSON `--experimental-dump-help` prints — so they are as true as `--help`. Needs nothing but
/// this binary (offline, on a fresh machine, in CI).
struct ManualCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate-manual",
        abstract: "Write the man pages (section 1) of syncfs-mount and its subcommands into DIR.",
        shouldDisplay: false
    )

    @Argument(help: "The directory for the pages (created if missing), e.g. /usr/local/share/man/man1.")
    var directory: String

    func run() throws {
        let dump = try Self.dumpHelp()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for page in ManualPage.pages(for: dump.command, version: SyncFSVersion.current) {
            let path = directory + "/" + page.name + ".1"
            try Data(page.text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            chmod(path, 0o644)
            print(path)
        }
    }

    /// This executable's own `--experimental-dump-help`.
    private static func dumpHelp() throws -> ManualPage.Dump {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        process.arguments = ["--experimental-dump-help"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try JSONDecoder().decode(ManualPage.Dump.self, from: data)
    }
}

/// One man page in roff (man(7) macros).
struct ManualPage {
    var name: String
    var text: String

    /// The part of `--experimental-dump-help`'s JSON the pages use.
    struct Dump: Decodable {
        var command: Command
    }

    struct Command: Decodable {
        var commandName: String
        var abstract: String?
        var discussion: String?
        var shouldDisplay: Bool?
        var arguments: [Argument]?
        var subcommands: [Command]?
    }

    struct Argument: Decodable {
        struct Name: Decodable {
            var kind: String
            var name: String
        }
        var kind: String
        var names: [Name]?
        var valueName: String?
        var abstract: String?
        var discussion: String?
        var defaultValue: String?
        var isOptional: Bool?
        var shouldDisplay: Bool?
    }

    /// The pages of `command` and of every displayed subcommand below it (not `help`).
    static func pages(for command: Command, version: String, parents: [String] = []) -> [ManualPage] {
        let path = parents + [command.commandName]
        var pages = [page(for: command, path: path, version: version)]
        for sub in command.subcommands ?? [] where sub.shouldDisplay != false && sub.commandName != "help" {
            pages += Self.pages(for: sub, version: version, parents: path)
        }
        return pages
    }

    private static func page(for command: Command, path: [String], version: String) -> ManualPage {
        let name = path.joined(separator: "-")
        let shown = (command.arguments ?? []).filter { $0.shouldDisplay != false }
        var lines = [
            ".TH \(escape(name.uppercased())) 1 \"\" \"syncfs-mount \(escape(version))\" \"User Commands\"",
            ".SH NAME", "\(escape(name)) \\- \(escape(command.abstract ?? ""))", ".SH SYNOPSIS",
            ".B \(escape(path.joined(separator: " ")))",
        ]
        let subcommands = (command.subcommands ?? []).filter { $0.shouldDisplay != false && $0.commandName != "help" }
        var synopsis: [String] = subcommands.isEmpty ? [] : ["\\fIsubcommand\\fR"]
        for argument in shown where !isHelp(argument) {
            let word = usage(argument)
            synopsis.append(argument.isOptional == true ? "[\(word)]" : word)
        }
        if !synopsis.isEmpty { lines.append(synopsis.joined(separator: " ")) }
        if let discussion = command.discussion, !discussion.isEmpty {
            lines += [".SH DESCRIPTION"] + paragraphs(discussion)
        }
        if !shown.isEmpty {
            lines.append(".SH OPTIONS")
            for argument in shown {
                lines += [".TP", label(argument)]
                var help = argument.abstract ?? ""
                if let discussion = argument.discussion, !discussion.isEmpty { help += " " + discussion }
                if let value = argument.defaultValue, !value.isEmpty { help += " (default: \(value))" }
                lines.append(escape(help))
            }
        }
        if !subcommands.isEmpty {
            lines.append(".SH SUBCOMMANDS")
            for sub in subcommands {
                lines += [
                    ".TP", "\\fB\(escape((path + [sub.commandName]).joined(separator: "-")))\\fR(1)",
                    escape(sub.abstract ?? ""),
                ]
            }
        }
        lines += examples(ManualExamples.byPage[name] ?? [])
        lines += [".SH SEE ALSO", seeAlso(path: path)]
        return ManualPage(name: name, text: lines.joined(separator: "\n") + "\n")
    }

    /// Each example: its sentence, then its lines verbatim in an indented block.
    private static func examples(_ examples: [ManualExamples.Example]) -> [String] {
        guard !examples.isEmpty else { return [] }
        return [".SH EXAMPLES"]
            + examples.flatMap { example in
                [".PP", escape(example.what), ".PP", ".in +4n", ".EX"] + example.lines.map(escape) + [".EE", ".in"]
            }
    }

    /// The section-5 pages (`dist/man`) and the top page.
    private static func seeAlso(path: [String]) -> String {
        var pages = path.count > 1 ? ["syncfs-mount(1)"] : []
        pages += ["syncfs-files(5)", "syncfs-fstab(5)", "syncfs-rules(5)", "syncfs-merge-commands(5)"]
        let references = pages.map { page in
            let (name, section) = (page.prefix { $0 != "(" }, page.drop { $0 != "(" })
            return "\\fB\(escape(String(name)))\\fR\(section)"
        }
        return references.joined(separator: ",\n") + ";\ndoc/CLI.md in the SyncFS sources"
    }

    private static func isHelp(_ argument: Argument) -> Bool {
        argument.names?.contains { $0.name == "help" } == true
    }

    /// `--name <value>`, `-h, --help` or `<value>`, in bold and italics.
    private static func label(_ argument: Argument) -> String {
        let value = argument.valueName.map { "\\fI<\(escape($0))>\\fR" } ?? ""
        if argument.kind == "positional" { return value }
        let names = (argument.names ?? []).map { name in
            "\\fB\(name.kind == "short" ? "\\-" : "\\-\\-")\(escape(name.name))\\fR"
        }
        return names.joined(separator: ", ") + (argument.kind == "option" ? " " + value : "")
    }

    private static func usage(_ argument: Argument) -> String {
        let value = "\\fI<\(escape(argument.valueName ?? "value"))>\\fR"
        if argument.kind == "positional" { return value }
        guard let long = argument.names?.first(where: { $0.kind == "long" }) ?? argument.names?.first else {
            return value
        }
        let flag = "\\fB\(long.kind == "short" ? "\\-" : "\\-\\-")\(escape(long.name))\\fR"
        return argument.kind == "option" ? flag + " " + value : flag
    }

    private static func paragraphs(_ text: String) -> [String] {
        text.components(separatedBy: "\n\n").flatMap { [".PP", escape($0)] }
    }

    /// Text safe in roff: backslashes and hyphens escaped, no line starting with a control
    /// character.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(".") || $0.hasPrefix("'") ? "\\&" + $0 : String($0) }
            .joined(separator: "\n")
    }
}
