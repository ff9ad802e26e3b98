import Foundation
import Glibc
import TestSupport
import Testing

/// `Support/hostile_server.py` as a child process on 127.0.0.1: a sync server that serves a
/// scripted feed of hostile entries (see the script). It accepts any token and stores nothing.
///
///     let server = try HostileServerProcess.start()
///     defer { server.stop() }
///     // mount server.url with ["--token-file", server.tokenFile]; then server.release(sentinel:)
///
/// The script exits by itself after `lifetime` seconds; `stop` (SIGTERM, then SIGKILL) is safe to
/// call twice and removes its temporary directory.
final class HostileServerProcess: @unchecked Sendable {
    /// Holds the token, port, release and expectation files and the log.
    let directory: String
    let port: Int
    private var pid: pid_t?

    var url: String { "http://127.0.0.1:\(port)/box" }
    var tokenFile: String { directory + "/token" }
    var logPath: String { directory + "/server.log" }
    private var releaseFile: String { directory + "/release" }
    private var expectFile: String { directory + "/expect.json" }

    private init(directory: String, port: Int, pid: pid_t) {
        self.directory = directory
        self.port = port
        self.pid = pid
    }

    /// `python3`: /usr/bin/python3, else the first on PATH (scripts/install-deps.sh --test installs it).
    static func python() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for candidate in ["/usr/bin/python3"] + path.split(separator: ":").map({ $0 + "/python3" })
        where access(candidate, X_OK) == 0 {
            return candidate
        }
        throw TestFolderError(message: "python3 is not installed (scripts/install-deps.sh --test installs it)")
    }

    /// The script's path: beside this file.
    static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("hostile_server.py").path
    }

    static func start(lifetime: Int = 240) throws -> HostileServerProcess {
        let directory = try makeTemporaryDirectory("syncfs-hostile")
        try writeFile(directory + "/token", "sfs_hostile-token-the-server-accepts-anything\n", mode: 0o600)
        let log = open(directory + "/server.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            close(log)
            close(null)
        }
        let pid = try TestFolder.spawn(
            [
                try python(), scriptPath, "--release-file", directory + "/release", "--port-file",
                directory + "/port", "--expect-file", directory + "/expect.json", "--lifetime", String(lifetime),
            ], stdin: null, stdout: log, stderr: log)
        var port: Int?
        _ = waitUntil(timeout: 30) {
            port = (try? readText(directory + "/port")).flatMap { Int($0) }
            return port != nil || TestFolder.waitForExit(pid, timeout: 0) != nil
        }
        guard let port else {
            kill(pid, SIGKILL)
            _ = TestFolder.waitForExit(pid, timeout: 10)
            let log = TestFolder.tail(of: directory + "/server.log", limit: 4000)
            try? FileManager.default.removeItem(atPath: directory)
            throw TestFolderError(message: "the hostile server did not start: \(log)")
        }
        return HostileServerProcess(directory: directory, port: port, pid: pid)
    }

    /// Starts serving phase 2 (the hostile entries), aimed at `sentinel`, and returns what a
    /// correct client must show.
    func release(sentinel: String) throws -> HostileExpectations {
        try writeFile(releaseFile, sentinel + "\n")
        var expectations: HostileExpectations?
        _ = waitUntil(timeout: 30) {
            expectations = try? JSONDecoder().decode(HostileExpectations.self, from: Data(readFile(expectFile)))
            return expectations != nil
        }
        guard let expectations else {
            throw TestFolderError(message: "the hostile server wrote no expectations: \(log())")
        }
        return expectations
    }

    func log() -> String { TestFolder.tail(of: logPath, limit: 4000) }

    /// SIGTERM, then SIGKILL after 5 s; removes the temporary directory.
    func stop() {
        if let pid {
            self.pid = nil
            kill(pid, SIGTERM)
            if TestFolder.waitForExit(pid, timeout: 5) == nil {
                kill(pid, SIGKILL)
                _ = TestFolder.waitForExit(pid, timeout: 10)
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }
}

/// What `hostile_server.py` expects a correct client to show (its `expect` dictionary).
struct HostileExpectations: Decodable {
    /// File ID (hex) → what is wrong with it.
    var refused: [String: String]
    /// Two directories, each the other's parent: at least one is refused.
    var cycle: [String]
    /// Path in the mount → content.
    var good: [String: String]
    /// Path → target.
    var symlinks: [String: String]
    /// Path → permission bits (setuid/setgid cleared).
    var modes: [String: Int]
    /// Files whose manifests lie: reading them must fail.
    var lying: [String]
    /// Names that must not appear in the mount's root.
    var absentNames: [String]
}

/// `status --json`'s list of refused remote entries.
struct RefusalStatus: Decodable {
    struct Refusal: Decodable {
        var fileID: String
        var version: Int64
        var reason: String
    }

    var refusedRemoteEntries: [Refusal]?
}

/// The fingerprint of a tree (lstat, no link followed): per path its kind and permission bits
/// (setuid/setgid included), size, owner, content hash and link target.
enum TreeFingerprint {
    static func of(_ root: String) -> [String: String] {
        var result: [String: String] = [:]
        var stack = [""]
        while let relative = stack.popLast() {
            let path = relative.isEmpty ? root : root + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            var line = "mode \(String(info.st_mode, radix: 8)) size \(info.st_size) owner \(info.st_uid):\(info.st_gid)"
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                line += " content \((try? readFile(path)) ?? [])"  // small files: the bytes themselves
            case S_IFLNK:
                line += " target \((try? readLink(path)) ?? "?")"
            case S_IFDIR:
                for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
                    stack.append(relative.isEmpty ? name : relative + "/" + name)
                }
            default:
                break
            }
            result[relative.isEmpty ? "." : relative] = line
        }
        return result
    }

    /// The paths whose fingerprints differ.
    static func difference(_ before: [String: String], _ after: [String: String]) -> String {
        let paths = Set(before.keys).union(after.keys).sorted().filter { before[$0] != after[$0] }
        return paths.map { "\($0): \(before[$0] ?? "absent") -> \(after[$0] ?? "absent")" }.joined(separator: "; ")
    }
}
