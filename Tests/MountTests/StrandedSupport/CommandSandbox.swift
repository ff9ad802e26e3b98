import Foundation
import Glibc
import TestSupport
import Testing

/// A private world for commands run as the user would: its own `$HOME`, `$XDG_STATE_HOME` (so
/// the default state root is `stateRoot`) and `$XDG_RUNTIME_DIR` (so `list` sees only the mounts
/// started here). Mounts are started in the background (`syncfs-mount mount` without
/// `--foreground`, as a person would); `tearDown` unmounts every one of them, whatever happened.
final class CommandSandbox: @unchecked Sendable {
    let base: String
    var stateRoot: String { base + "/state-home/syncfs" }
    private var mountpoints: [String] = []

    init() throws {
        umask(0o022)
        base = try makeTemporaryDirectory("syncfs-stranded")
        try makeDirectory(base + "/home", mode: 0o700)
        try makeDirectory(base + "/run", mode: 0o700)
    }

    var environment: [String: String] {
        ["HOME": base + "/home", "XDG_STATE_HOME": base + "/state-home", "XDG_RUNTIME_DIR": base + "/run"]
    }

    /// Runs `syncfs-mount ARGUMENTS` in this sandbox's environment, plus `extraEnvironment`.
    func run(
        _ arguments: [String], extraEnvironment: [String: String] = [:], timeout: Double = 120
    ) throws -> ModelProcessResult {
        ModelProcess.run(
            [try TestFolder.binaryPath()] + arguments, env: environment.merging(extraEnvironment) { $1 },
            timeout: timeout)
    }

    /// `mount CONTAINER BASE/MOUNTPOINT EXTRA…` in the background, remembered for `tearDown`; the
    /// daemon gets `extraEnvironment` too (`OutageSwitch`).
    func mount(
        _ container: String, at mountpoint: String, _ extra: [String] = [], extraEnvironment: [String: String] = [:]
    ) throws -> ModelProcessResult {
        if !pathExists(mountpoint) { try makeDirectory(mountpoint) }
        mountpoints.append(mountpoint)
        return try run(["mount", container, mountpoint] + extra, extraEnvironment: extraEnvironment)
    }

    /// `unmount MOUNTPOINT` (queued changes stay after `syncTimeout` seconds without progress).
    func unmount(_ mountpoint: String, syncTimeout: Double = 30) throws -> ModelProcessResult {
        try run(["unmount", mountpoint, "--sync-timeout", String(syncTimeout)])
    }

    /// `list --json`, decoded.
    func list() throws -> Listing {
        let result = try run(["list", "--json"])
        guard result.ok, let listing = try? JSONDecoder().decode(Listing.self, from: Data(result.stdout.utf8)) else {
            throw TestFolderError(message: "list --json: \(result)")
        }
        return listing
    }

    func tearDown() {
        for mountpoint in mountpoints where TestFolder.isMounted(mountpoint) {
            _ = try? unmount(mountpoint, syncTimeout: 1)
            if TestFolder.isMounted(mountpoint) {
                Issue.record("tearDown: \(mountpoint) was still mounted; detaching it")
                _ = ModelProcess.run(["fusermount3", "-u", "-z", mountpoint], timeout: 30)
            }
        }
        // Daemons whose mount went away without them (a test that failed half-way).
        let registry = base + "/run/syncfs/mounts"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: registry)) ?? [] where name.hasSuffix(".pid")
        {
            if let text = try? String(contentsOfFile: registry + "/" + name, encoding: .utf8),
                let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
            {
                kill(pid, SIGKILL)
            }
        }
        if mountpoints.allSatisfy({ !TestFolder.isMounted($0) }) {
            _ = ModelProcess.run(["chmod", "-R", "u+rwX", base], timeout: 30)
            try? FileManager.default.removeItem(atPath: base)
        }
    }

    /// `list --json` as documented in doc/CLI.md.
    struct Listing: Decodable {
        struct Mount: Decodable {
            var container: String
            var mountpoint: String
            var stateDirectory: String
            var pid: Int32
            var state: String
            var online: Bool?
            var queued: Int?
            var resume: String?
        }
        struct Waiting: Decodable {
            var stateDirectory: String
            var container: String
            var mountpoint: String?
            var queued: Int
            var resume: String
        }
        var mounts: [Mount]
        var waiting: [Waiting]
        var skipped: [String]
    }
}
