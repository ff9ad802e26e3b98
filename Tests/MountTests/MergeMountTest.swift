import Foundation
import Glibc
import TestSupport
import Testing

/// Merges and conflicts on real mounts: the built binary, two daemons on one container,
/// edits made through the mount points while neither uploads, then `sync` on A, then on B.
@Suite(.serialized)
struct MergeMountTest {
    /// One unresolved conflict as `syncfs-mount conflicts --json` prints it.
    struct Listed: Decodable {
        var path: String
        var originalPath: String?
        var host: String
        var reason: String
    }

    func conflicts(_ folder: TestFolder) throws -> [Listed] {
        let result = try folder.expectCommand(["conflicts", folder.root, "--json"])
        return try JSONDecoder().decode([Listed].self, from: Data(result.stdout.utf8))
    }

    /// `name` holds `base` on both mounts; then A writes `onA`, B writes `onB`; A syncs, then B.
    func editOnBothSides(_ mounts: SyncedMounts, _ name: String, base: String, onA: String, onB: String) throws {
        let (a, b) = (mounts.a, mounts.b)
        try writeFile(a.path(name), base)
        try #require(a.expectSync())
        try #require(waitUntil { try readText(b.path(name)) == base }, "\(name) never reached B\n\(mounts.logs())")
        try writeFile(a.path(name), onA)
        try writeFile(b.path(name), onB)
        #expect(a.expectSync())
        #expect(b.expectSync())
    }

    @Test func editsOfDifferentLinesMergeOnBothMounts() throws {
        try SyncedMounts.with(uploadDelay: 600_000) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let base = (1...40).map { "line \($0)\n" }.joined()
            let onA = base.replacingOccurrences(of: "line 3\n", with: "line 3, edited on A\n")
            let onB = base.replacingOccurrences(of: "line 37\n", with: "line 37, edited on B\n")
            try editOnBothSides(mounts, "todo.txt", base: base, onA: onA, onB: onB)
            let merged = base.replacingOccurrences(of: "line 3\n", with: "line 3, edited on A\n")
                .replacingOccurrences(of: "line 37\n", with: "line 37, edited on B\n")
            #expect(
                waitUntil { try readText(a.path("todo.txt")) == merged && readText(b.path("todo.txt")) == merged },
                "both mounts show both edits\n\(mounts.logs())")
            #expect(try listDirectory(a.root).sorted() == ["todo.txt"], "no conflict copy")
            #expect(try conflicts(a).isEmpty && conflicts(b).isEmpty)
            #expect(b.daemonLog().contains("merged both versions"), "B made the merge")
            expectConverged(mounts, "after the merge")
        }
    }

    @Test func aConflictIsListedCountedAndResolvedOnEveryMount() throws {
        try SyncedMounts.with(uploadDelay: 600_000) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try editOnBothSides(mounts, "plan.txt", base: "draft\n", onA: "A's plan\n", onB: "B's plan\n")
            try #require(
                waitUntil { try listDirectory(a.root).count == 2 && listDirectory(b.root).count == 2 },
                "both mounts see the conflict copy\n\(mounts.logs())")
            let copy = try #require(try listDirectory(a.root).first { $0 != "plan.txt" })
            #expect(copy.hasPrefix("plan (conflict from ") && copy.hasSuffix(").txt"), "\(copy)")
            #expect(try readText(a.path("plan.txt")) == "A's plan\n")
            #expect(try readText(b.path(copy)) == "B's plan\n")
            for folder in [a, b] {
                #expect(
                    waitUntil { try conflicts(folder).map(\.path) == [copy] },
                    "conflicts on \(folder.root): \((try? conflicts(folder).map(\.path)) ?? [])")
                let listed = try conflicts(folder)
                #expect(listed.first?.originalPath == "plan.txt")
                #expect(listed.first?.reason.contains("same lines") == true, "\(listed.first?.reason ?? "")")
                #expect(try syncfsState(folder.path("plan.txt")) == "conflict")
                #expect(try syncfsState(folder.path(copy)) == "conflict")
                let status: ConflictCount = try folder.statusJSON(of: folder.root)
                #expect(status.conflicts == 1)
                let human = try folder.expectCommand(["status", folder.root])
                #expect(human.stdout.contains("conflicts: 1 unresolved"), "\(human.stdout)")
            }
            // A file with no conflict cannot be resolved; the copy can (from B), and A forgets it too.
            try a.expectCommand(["resolve", a.path("missing-conflict")], status: 65)
            try writeFile(a.path("other.txt"), "x")
            try a.expectCommand(["resolve", a.path("other.txt")], status: 1)
            try b.expectCommand(["resolve", b.path(copy)])
            #expect(b.expectSync())
            #expect(waitUntil { try conflicts(a).isEmpty }, "A still lists the conflict\n\(mounts.logs())")
            #expect(try syncfsState(a.path("plan.txt")) == "local")
            #expect(try listDirectory(a.root).sorted() == ["other.txt", "plan.txt", copy].sorted(), "both files kept")
        }
    }

    /// A file merged with conflict markers is listed by `conflicts` as what it is, never as a
    /// "copy" of itself; a conflict copy still says which file it is a copy of.
    @Test func aFileMergedWithMarkersIsNotCalledACopy() throws {
        try SyncedMounts.with(uploadDelay: 600_000) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path(".syncfs-rules"), "*.md merge=text conflict=markers\n")
            #expect(a.expectSync())
            #expect(waitUntil { pathExists(b.path(".syncfs-rules")) })
            try editOnBothSides(mounts, "notes.md", base: "draft\n", onA: "A's notes\n", onB: "B's notes\n")
            try editOnBothSides(mounts, "plan.txt", base: "draft\n", onA: "A's plan\n", onB: "B's plan\n")
            try #require(waitUntil { try conflicts(b).count == 2 }, "\(mounts.logs())")
            let text = try b.expectCommand(["conflicts", b.root]).stdout
            let lines = text.split(separator: "\n").map(String.init)
            let markers = try #require(lines.first { $0.hasPrefix("notes.md: ") }, "\(text)")
            #expect(markers.contains("merged with conflict markers") && !markers.contains("copy"), "\(markers)")
            let copy = try #require(lines.first { $0.hasPrefix("plan (conflict from ") }, "\(text)")
            #expect(copy.contains("copy of plan.txt"), "\(copy)")
        }
    }

    @Test func rulesFileChoosesAPolicyPerPath() throws {
        try SyncedMounts.with(uploadDelay: 600_000) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(
                a.path(".syncfs-rules"), "# keep the remote (first committed) version of logs\n*.log prefer=remote\n")
            #expect(a.expectSync())
            #expect(waitUntil { pathExists(b.path(".syncfs-rules")) })
            try editOnBothSides(mounts, "run.log", base: "start\n", onA: "start\nA\n", onB: "start\nB\n")
            #expect(
                waitUntil { try readText(b.path("run.log")) == "start\nA\n" },
                "B took the container's version\n\(mounts.logs())")
            #expect(try listDirectory(b.root).sorted() == [".syncfs-rules", "run.log"], "no copy")
        }
    }
}

extension MergeMountTest {
    /// A private directory for a test's marker files and local merge-command configuration
    /// (0700, owned by the test's user: a trusted place for `--merge-commands`).
    func privateDirectory() throws -> String {
        return try makeTemporaryDirectory("syncfs-merge")
    }

    /// A synced rules file names a command this machine never allowed: the merge keeps both, says
    /// why, and the command never runs (B runs as root here).
    @Test func aCommandTheMachineDidNotAllowNeverRuns() throws {
        let directory = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let marker = directory + "/pwned"
        // An empty local configuration: no command is allowed on B.
        let allowList = directory + "/merge-commands"
        try writeFile(allowList, "# nothing allowed here\n", mode: 0o600)
        try SyncedMounts.with(uploadDelay: 600_000, argumentsB: ["--merge-commands", allowList]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(
                a.path(".syncfs-rules"),
                "*.txt merge=command:touch \(marker); cat %B > %A\n*.md merge=command:evil\n")
            #expect(a.expectSync())
            #expect(waitUntil { pathExists(b.path(".syncfs-rules")) })
            try editOnBothSides(mounts, "plan.txt", base: "draft\n", onA: "A's plan\n", onB: "B's plan\n")
            try editOnBothSides(mounts, "note.md", base: "draft\n", onA: "A's note\n", onB: "B's note\n")
            #expect(
                waitUntil { try conflicts(b).count == 2 }, "both merges kept both versions\n\(mounts.logs())")
            #expect(!pathExists(marker), "the synced command ran on B")
            let listed = try conflicts(b)
            for entry in listed {
                #expect(entry.reason.contains("not allowed on this machine"), "\(entry.reason)")
            }
            #expect(listed.contains { $0.reason.contains("\"evil\"") }, "\(listed.map(\.reason))")
            #expect(try readText(b.path("plan.txt")) == "A's plan\n", "the file took the container's version")
            let status: ConflictCount = try b.statusJSON(of: b.root)
            #expect(status.conflicts == 2)
            // Logged once per file, not once per round.
            let refusals = b.daemonLog(limit: 200_000).components(separatedBy: "merge command refused for plan.txt")
            #expect(refusals.count == 2, "\(refusals.count - 1) log lines for plan.txt\n\(b.daemonLog())")
        }
    }

    /// `--merge-commands` with a file another user could have written (or one inside the mount)
    /// fails the mount with exit 65 and says why; nothing is mounted.
    @Test func anUntrustedMergeCommandsFileFailsTheMount() throws {
        let directory = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try makeDirectory(directory + "/container")
        try makeDirectory(directory + "/mnt")
        let writable = directory + "/merge-commands"
        try writeFile(writable, "stamp id -u > %A\n", mode: 0o600)
        chmod(writable, 0o664)
        for (file, why) in [
            (writable, "writable by group or others"), (directory + "/mnt/merge-commands", "inside the synced folder"),
        ] {
            let result = ModelProcess.run(
                [
                    try TestFolder.binaryPath(), "mount", directory + "/container", directory + "/mnt", "--state-dir",
                    directory + "/state", "--foreground", "--create", "--merge-commands", file,
                ], timeout: 60)
            #expect(result.status == 65, "\(result)")
            #expect(result.stderr.contains(why), "\(result.stderr)")
            #expect(!TestFolder.isMounted(directory + "/mnt"))
        }
    }

    /// A command the machine allows runs; as root it runs as the file's owner, here nobody
    /// (files that arrive from the container belong to the mount root's owner, root), never as
    /// root; its environment is clean.
    @Test func anAllowedCommandRunsAsTheOwnerNeverAsRoot() throws {
        let directory = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let allowList = directory + "/merge-commands"
        try writeFile(
            allowList, "# name  command\nstamp  { id -u; id -G; printenv SECRET_TOKEN; cat %B; } > %A\n", mode: 0o600)
        setenv("SECRET_TOKEN", "do-not-leak", 1)
        defer { unsetenv("SECRET_TOKEN") }
        try SyncedMounts.with(uploadDelay: 600_000, argumentsB: ["--merge-commands", allowList]) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path(".syncfs-rules"), "*.txt merge=command:stamp\n")
            #expect(a.expectSync())
            #expect(waitUntil { pathExists(b.path(".syncfs-rules")) })
            try editOnBothSides(mounts, "plan.txt", base: "draft\n", onA: "A's plan\n", onB: "B's plan\n")
            let expectedUser = getuid() == 0 ? "65534" : String(getuid())
            let expectedGroups = getuid() == 0 ? "65534" : nil
            #expect(
                waitUntil { try readText(b.path("plan.txt")).hasPrefix(expectedUser + "\n") },
                "the command ran as \(expectedUser)\n\((try? readText(b.path("plan.txt"))) ?? "")\n\(mounts.logs())")
            let lines = try readText(b.path("plan.txt")).split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first != "0", "never as root")
            if let expectedGroups { #expect(lines.dropFirst().first.map(String.init) == expectedGroups, "\(lines)") }
            #expect(!lines.contains("do-not-leak"), "the daemon's environment leaked: \(lines)")
            #expect(lines.contains("A's plan"), "the command saw the container's version (%B)")
            #expect(try conflicts(b).isEmpty, "merged, no conflict copy")
            #expect(waitUntil { try readText(a.path("plan.txt")) == readText(b.path("plan.txt")) })
        }
    }
}

/// The part of `status --json` this suite reads.
struct ConflictCount: Decodable {
    var conflicts: Int
}
