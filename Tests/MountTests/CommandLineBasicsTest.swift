import Foundation
import Glibc
import TestSupport
import Testing

/// The command line's basics (doc/CLI.md, "Version, usage, man pages and completions").
@Suite
struct CommandLineBasicsTest {
    private static var packageRoot: String {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        return root.path
    }

    private func run(_ arguments: [String]) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath()] + arguments, timeout: 60)
    }

    /// `--version` prints the version, which follows the newest version heading of CHANGELOG.md:
    /// equal to it (`## 1.2.0 …`), or, while the newest heading is `## Unreleased`, a `-dev`
    /// version newer than every released heading.
    @Test func versionFollowsTheChangelog() throws {
        let printed = try run(["--version"])
        #expect(printed.ok, "\(printed)")
        let version = printed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let changelog = try String(contentsOfFile: Self.packageRoot + "/CHANGELOG.md", encoding: .utf8)
        let headings = changelog.split(separator: "\n").filter { $0.hasPrefix("## ") }.map {
            $0.dropFirst(3).trimmingCharacters(in: .whitespaces)
        }
        let newest = try #require(headings.first)
        let released = headings.compactMap { heading -> [Int]? in
            let word = heading.split(separator: " ").first.map {
                String($0).trimmingCharacters(in: .init(charactersIn: "[]v"))
            }
            let parts = word?.split(separator: ".").compactMap { Int($0) } ?? []
            return parts.count == 3 ? parts : nil
        }
        if newest.lowercased().hasPrefix("unreleased") {
            #expect(version.hasSuffix("-dev"), "'\(version)': unreleased work is a -dev version")
            let mine = version.dropLast(4).split(separator: ".").compactMap { Int($0) }
            #expect(mine.count == 3, "'\(version)' is not X.Y.Z-dev")
            if let latest = released.first {
                #expect(mine.lexicographicallyPrecedes(latest) == false && mine != latest)
            }
        } else {
            #expect(newest.hasPrefix(version) || newest.hasPrefix("[" + version), "'\(version)' vs '## \(newest)'")
        }
    }

    /// A script that forgets the subcommand must not read as success.
    @Test func noSubcommandPrintsTheUsageOnStandardErrorAndExits64() throws {
        let bare = try run([])
        #expect(bare.status == 64, "\(bare)")
        #expect(bare.stdout.isEmpty)
        #expect(bare.stderr.contains("USAGE: syncfs-mount") && bare.stderr.contains("mount"), "\(bare.stderr)")
    }

    /// The generated man pages name every subcommand and every option the command definitions
    /// have (`--experimental-dump-help`), so they cannot drift from `--help`.
    @Test func manPagesCoverEveryCommandAndOption() throws {
        let directory = try makeTemporaryDirectory("syncfs-man")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let generated = ModelProcess.run([
            Self.packageRoot + "/scripts/gen-man.sh", try TestFolder.binaryPath(), directory,
        ])
        #expect(generated.ok, "\(generated)")
        let dump = try run(["--experimental-dump-help"])
        let root = try #require(
            (try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])?["command"]
                as? [String: Any])
        var checked = 0
        func check(_ command: [String: Any], path: [String]) throws {
            let name = path.joined(separator: "-")
            let page = try String(contentsOfFile: "\(directory)/\(name).1", encoding: .utf8)
            for argument in command["arguments"] as? [[String: Any]] ?? []
            where argument["shouldDisplay"] as? Bool != false {
                for option in argument["names"] as? [[String: String]] ?? [] {
                    let dashes = option["kind"] == "short" ? "\\-" : "\\-\\-"
                    let spelled = dashes + (option["name"] ?? "").replacingOccurrences(of: "-", with: "\\-")
                    #expect(page.contains(spelled), "\(name).1 lacks \(spelled)")
                    checked += 1
                }
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                guard sub["shouldDisplay"] as? Bool != false, let subName = sub["commandName"] as? String,
                    subName != "help"
                else { continue }
                #expect(
                    page.contains(
                        "\\fB\((path + [subName]).joined(separator: "-").replacingOccurrences(of: "-", with: "\\-"))\\fR(1)"
                    ))
                try check(sub, path: path + [subName])
            }
        }
        try check(root, path: ["syncfs-mount"])
        #expect(checked > 50, "only \(checked) options seen")
        // Spot checks of this release's commands, and that man(1) can read them.
        for page in ["syncfs-mount-init", "syncfs-mount-list", "syncfs-mount-token-create"] {
            #expect(pathExists("\(directory)/\(page).1"), "\(page)")
        }
        #expect(
            try String(contentsOfFile: directory + "/syncfs-mount-mount.1", encoding: .utf8).contains("\\-\\-create"))
    }

    /// No test hook in the shipped command line: no option of any command, hidden ones included,
    /// is named `test…`, so neither `mount --test-…` nor the mount helper's `-o test_…` (an fstab
    /// line) reaches one. The tests give their hooks through the environment (doc/CLI.md, "Test
    /// hooks"); the old `--test-outage-file` is refused as any unknown option.
    @Test func noOptionIsATestHook() throws {
        let dump = try run(["--experimental-dump-help"])
        let root = try #require(
            (try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])?["command"]
                as? [String: Any])
        var seen = 0
        var hooks: [String] = []
        func collect(_ command: [String: Any], path: [String]) {
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                for option in argument["names"] as? [[String: String]] ?? [] {
                    seen += 1
                    let name = option["name"] ?? ""
                    if name.lowercased().hasPrefix("test") {
                        hooks.append((path + ["--" + name]).joined(separator: " "))
                    }
                }
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                collect(sub, path: path + [sub["commandName"] as? String ?? "?"])
            }
        }
        collect(root, path: ["syncfs-mount"])
        #expect(seen > 50, "only \(seen) options seen")
        #expect(hooks.isEmpty, "test hooks on the command line: \(hooks)")
        let old = try run(["mount", "/nonexistent-container", "/nonexistent-mnt", "--test-outage-file", "/tmp/x"])
        #expect(old.status == 64, "\(old)")
        #expect(old.stderr.contains("--test-outage-file"), "\(old.stderr)")
    }

    /// A mistyped command is named as such, with the nearest command, and exits 64 (not "2
    /// unexpected arguments").
    @Test func anUnknownCommandSuggestsTheNearest() throws {
        let typo = try run(["stauts"])
        #expect(typo.status == 64, "\(typo)")
        #expect(typo.stderr.contains("unknown command 'stauts'; did you mean 'status'?"), "\(typo.stderr)")
        let withArguments = try run(["unmout", "/tmp/somewhere"])
        #expect(withArguments.status == 64, "\(withArguments)")
        #expect(withArguments.stderr.contains("did you mean 'unmount'?"), "\(withArguments.stderr)")
        let nothingNear = try run(["xyzzyplugh"])
        #expect(nothingNear.status == 64, "\(nothingNear)")
        #expect(nothingNear.stderr.contains("unknown command 'xyzzyplugh'"), "\(nothingNear.stderr)")
        #expect(!nothingNear.stderr.contains("did you mean"), "\(nothingNear.stderr)")
    }

    /// The benchmarks' commands are `syncfs-bench`'s, built beside `syncfs-mount`: the shipped
    /// command refuses them as unknown (doc/CLI.md, "Benchmark commands").
    @Test func theBenchmarkCommandsAreNotInTheShippedCommand() throws {
        for command in ["seed-container", "seed-synthetic", "measure-pipeline", "measure-server"] {
            let shipped = try run([command, "--help"])
            #expect(shipped.status == 64, "\(shipped)")
            #expect(shipped.stderr.contains("unknown command '\(command)'"), "\(shipped.stderr)")
            let bench = ModelProcess.run([try TestFolder.benchBinaryPath(), "help", command])
            #expect(bench.ok && bench.stdout.contains("USAGE: syncfs-bench \(command)"), "\(bench)")
        }
    }

    /// A server address typed without its scheme gets a message about the scheme, whether or not
    /// --token-file is given, not one about --token-file.
    @Test func aServerAddressWithoutItsSchemeIsNamed() throws {
        for extra in [["--token-file", "/tmp/no-such-token"], []] {
            let result = try run(["mount", "sync.example.org:8443/box", "/tmp/no-such-mountpoint"] + extra)
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("https://sync.example.org:8443/box"), "\(result.stderr)")
            #expect(!result.stderr.contains("--token-file"), "\(result.stderr)")
        }
    }

    /// `--cache-size` takes SI and IEC suffixes (doc/CLI.md): checked by the parser before
    /// anything else, so a container that does not exist fails later, for that reason.
    @Test func cacheSizesTakeSIAndIECSuffixes() throws {
        for size in ["20GB", "20GiB", "20G", "500MB", "1TB", "750kB", "2 GB"] {
            let result = try run([
                "mount", "/tmp/no-such-container-\(getpid())", "/tmp/no-such-mnt", "--cache-size", size,
            ])
            #expect(!result.stderr.contains("--cache-size"), "\(size): \(result.stderr)")
            #expect(result.status == 65, "\(size): \(result)")
        }
        let wrong = try run(["mount", "/tmp/no-such-container", "/tmp/no-such-mnt", "--cache-size", "20XB"])
        #expect(wrong.status == 64 && wrong.stderr.contains("--cache-size"), "\(wrong)")
    }

    @Test func completionScriptsKnowTheNewCommands() throws {
        for shell in ["bash", "zsh", "fish"] {
            let script = try run(["--generate-completion-script", shell])
            #expect(script.ok && script.stdout.contains("list") && script.stdout.contains("init"), "\(shell)")
        }
    }
}
