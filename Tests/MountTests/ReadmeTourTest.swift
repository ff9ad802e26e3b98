import Foundation
import Glibc
import TestSupport
import Testing

/// README.md's "A short tour" runs as written: its `sh` block, pasted into bash on a fresh
/// machine, succeeds and does what its comments say.
@Suite
struct ReadmeTourTest {
    @Test func theTourRunsAsWrittenInAFreshHome() throws {
        let tour = try ReadmeBlocks.shellBlock(after: "## A short tour")
        let sandbox = try FreshHome()
        defer { sandbox.tearDown() }
        let result = try sandbox.runScript(tour, timeout: 300)
        #expect(result.ok, "the tour failed:\n\(result)\n\(sandbox.daemonLogs())")

        let lines = result.stdout.split(separator: "\n").map(String.init)
        // `cat ~/Other/note.txt` on the second mount, and `cat ~/Tour/note.txt` after the restore.
        #expect(lines.filter { $0 == "hello" }.count == 2, "\(result.stdout)")
        #expect(lines.contains("user.tag=\"blue\""), "the attribute reached the other mount: \(result.stdout)")
        #expect(lines.contains("restored note.txt") && lines.contains("restored draft.txt"), "\(result.stdout)")
        // The tour ends by unmounting everything it mounted.
        #expect(sandbox.mountsBelow().isEmpty, "still mounted: \(sandbox.mountsBelow())")
    }
}

/// The fenced blocks of README.md.
enum ReadmeBlocks {
    static var packageRoot: String {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        return root.path
    }

    /// The first ```sh block after the line `heading`.
    static func shellBlock(after heading: String) throws -> String {
        let readme = try String(contentsOfFile: packageRoot + "/README.md", encoding: .utf8)
        let lines = readme.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: heading),
            let open = lines[start...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "```sh" }),
            let close = lines[(open + 1)...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "```" })
        else { throw TestFolderError(message: "README.md has no ```sh block after \(heading)") }
        return lines[(open + 1)..<close].joined(separator: "\n") + "\n"
    }
}

/// A fresh machine's user, as far as SyncFS can tell: an empty home directory, its own XDG
/// directories (state, runtime, configuration, data) and the built binary first on PATH as
/// `syncfs-mount`. `tearDown` unmounts every mount below it and stops every daemon it started,
/// whatever happened.
final class FreshHome: @unchecked Sendable {
    let base: String
    var home: String { base + "/home" }
    private var scriptGroup: pid_t = -1

    init() throws {
        umask(0o022)
        base = try makeTemporaryDirectory("syncfs-tour")
        try makeDirectory(home, mode: 0o700)
        try makeDirectory(base + "/run", mode: 0o700)
        try makeDirectory(base + "/bin", mode: 0o755)
        let binary = try TestFolder.binaryPath()
        try posix("symlink") { symlink(binary, base + "/bin/syncfs-mount") }
    }

    var environment: [String: String] {
        [
            "HOME": home, "PATH": base + "/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "XDG_STATE_HOME": home + "/.local/state", "XDG_CONFIG_HOME": home + "/.config",
            "XDG_DATA_HOME": home + "/.local/share", "XDG_RUNTIME_DIR": base + "/run", "LANG": "C.UTF-8",
        ]
    }

    /// `bash -euo pipefail SCRIPT` in the home directory, with signals as a terminal's shell has
    /// them.
    func runScript(_ script: String, timeout: Double) throws -> ModelProcessResult {
        let path = base + "/script.sh"
        try writeFile(path, script)
        let process = ModelProcess(
            ["/bin/bash", "-euo", "pipefail", path], cwd: home, env: environment, defaultSignals: true)
        scriptGroup = process.pid
        return process.wait(timeout: timeout)
    }

    /// The mount points below this home, from /proc/mounts.
    func mountsBelow() -> [String] {
        TestFolder.mountEntries().map(\.mountPoint).filter { $0.hasPrefix(base + "/") }
    }

    /// The logs of the daemons' state directories (for a failure message).
    func daemonLogs() -> String {
        let root = home + "/.local/state/syncfs"
        return ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted().map {
            "--- \($0)/syncfs.log\n" + TestFolder.tail(of: "\(root)/\($0)/syncfs.log", limit: 4000)
        }.joined(separator: "\n")
    }

    func tearDown() {
        for mountpoint in mountsBelow() {
            _ = ModelProcess.run(
                [base + "/bin/syncfs-mount", "unmount", mountpoint, "--sync-timeout", "1"], env: environment,
                timeout: 60)
            if TestFolder.isMounted(mountpoint) { TestFolder.lazyUnmount(mountpoint) }
        }
        // Daemons whose mount went away without them, by their registry files.
        let registry = base + "/run/syncfs/mounts"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: registry)) ?? [] where name.hasSuffix(".pid")
        {
            guard let text = try? String(contentsOfFile: registry + "/" + name, encoding: .utf8),
                let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0,
                let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8),
                command.contains("syncfs-mount")
            else { continue }
            kill(pid, SIGKILL)
        }
        // What the script left running in the background (its process group).
        if scriptGroup > 0 { kill(-scriptGroup, SIGKILL) }
        if mountsBelow().isEmpty {
            _ = ModelProcess.run(["chmod", "-R", "u+rwX", base], timeout: 30)
            try? FileManager.default.removeItem(atPath: base)
        } else {
            Issue.record("tearDown: still mounted below \(base): \(mountsBelow())")
        }
    }
}
