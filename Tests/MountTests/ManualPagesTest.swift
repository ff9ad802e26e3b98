import Foundation
import Glibc
import TestSupport
import Testing

/// The man pages `scripts/gen-man.sh` writes (doc/CLI.md, "Version, usage, man pages and
/// completions"): they build without a warning, the main ones have examples, the file-format
/// pages are there, and every command line they show — and every one in README.md — uses only
/// subcommands and options that exist.
@Suite
struct ManualPagesTest {
    private static let fileFormatPages = [
        "syncfs-rules.5", "syncfs-merge-commands.5", "syncfs-fstab.5", "syncfs-files.5",
    ]

    /// The pages in a temporary directory, removed by `body`'s end.
    private func withPages(_ body: (String, [String]) throws -> Void) throws {
        let directory = try makeTemporaryDirectory("syncfs-man")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let generated = ModelProcess.run([
            ReadmeBlocks.packageRoot + "/scripts/gen-man.sh", try TestFolder.binaryPath(), directory,
        ])
        #expect(generated.ok, "\(generated)")
        let pages = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        try body(directory, pages)
    }

    private func documentedCommands() throws -> DocumentedCommands {
        let dump = ModelProcess.run([try TestFolder.binaryPath(), "--experimental-dump-help"], timeout: 60)
        #expect(dump.ok, "\(dump)")
        return try DocumentedCommands(dumpHelp: dump.stdout)
    }

    /// As man(1) builds them: UTF-8 input through preconv (`-k`), every warning on.
    @Test func everyPageBuildsWithoutWarnings() throws {
        try withPages { directory, pages in
            for page in Self.fileFormatPages { #expect(pages.contains(page), "\(page) missing: \(pages)") }
            #expect(pages.count > 30, "\(pages)")
            for page in pages {
                let built = ModelProcess.run(["groff", "-k", "-man", "-Tutf8", "-ww", "-z", directory + "/" + page])
                #expect(built.ok && built.stderr.isEmpty, "\(page): \(built)")
            }
        }
    }

    /// Every command's page has an EXAMPLES section (the pages of `token` and `container` list
    /// their subcommands, whose pages have them).
    @Test func commandPagesHaveExamples() throws {
        try withPages { directory, pages in
            for page in pages where page.hasSuffix(".1") {
                let text = try String(contentsOfFile: directory + "/" + page, encoding: .utf8)
                if text.contains(".SH SUBCOMMANDS") && page != "syncfs-mount.1" { continue }
                #expect(text.contains(".SH EXAMPLES"), "\(page) has no examples")
            }
            let mount = try String(contentsOfFile: directory + "/syncfs-mount-mount.1", encoding: .utf8)
            #expect(mount.contains("syncfs\\-fstab\\fR(5)") && mount.contains("syncfs\\-rules\\fR(5)"))
        }
    }

    @Test func exampleCommandsUseOnlyExistingSubcommandsAndOptions() throws {
        let commands = try documentedCommands()
        try withPages { directory, pages in
            var checked = 0
            for page in pages {
                let text = try String(contentsOfFile: directory + "/" + page, encoding: .utf8)
                for line in Self.exampleLines(ofPage: text) {
                    for words in DocumentedCommands.commands(inShellLine: line) {
                        checked += 1
                        if let problem = commands.problem(words) { Issue.record("\(page): \(problem)") }
                    }
                }
            }
            #expect(checked > 40, "only \(checked) example commands found")
        }
    }

    /// The fstab lines and `mount -t fuse.syncfs` examples, through mount(8)'s helper in its fake
    /// mode (`-f`: the options are parsed as for a mount, nothing is mounted).
    @Test func fstabExamplesParseThroughTheMountHelper() throws {
        let folder = try FreshHome()
        defer { folder.tearDown() }
        let helper = folder.base + "/bin/mount.fuse.syncfs"
        let binary = try TestFolder.binaryPath()
        try posix("symlink") { symlink(binary, helper) }
        let page = try String(contentsOfFile: ReadmeBlocks.packageRoot + "/dist/man/syncfs-fstab.5", encoding: .utf8)
        var checked = 0
        for line in Self.exampleLines(ofPage: page) {
            let words = DocumentedCommands.shellWords(line)
            let operands: (String, String, String)?
            if words.starts(with: ["mount", "-t", "fuse.syncfs"]), let o = words.firstIndex(of: "-o"),
                o + 1 < words.count
            {
                operands = (words[3], words[4], words[o + 1])
            } else if words.count >= 4, words[2] == "fuse.syncfs" {
                operands = (words[0], words[1], words[3])
            } else {
                operands = nil
            }
            guard let (container, mountpoint, options) = operands else { continue }
            checked += 1
            let fake = ModelProcess.run(
                [helper, container, mountpoint, "-f", "-o", options], env: folder.environment, timeout: 60)
            #expect(fake.ok, "\(line)\n\(fake)")
        }
        #expect(checked == 3, "fstab examples found: \(checked)")
    }

    @Test func readmeCommandsUseOnlyExistingSubcommandsAndOptions() throws {
        let commands = try documentedCommands()
        let readme = try String(contentsOfFile: ReadmeBlocks.packageRoot + "/README.md", encoding: .utf8)
        var checked = 0
        var inShell = false
        for line in readme.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("```") {
                inShell = trimmed == "```sh"
                continue
            }
            guard inShell else { continue }
            for words in DocumentedCommands.commands(inShellLine: trimmed) {
                checked += 1
                if let problem = commands.problem(words) { Issue.record("README.md: \(problem)") }
            }
        }
        #expect(checked > 20, "only \(checked) commands found in README.md")
    }

    /// The lines of a page's `.EX` … `.EE` blocks, roff escapes undone.
    static func exampleLines(ofPage text: String) -> [String] {
        var lines: [String] = []
        var inExample = false
        for line in text.components(separatedBy: "\n") {
            if line == ".EX" {
                inExample = true
            } else if line == ".EE" {
                inExample = false
            } else if inExample {
                lines.append(
                    line.replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\&", with: "")
                        .replacingOccurrences(of: "\\e", with: "\\"))
            }
        }
        return lines
    }
}
