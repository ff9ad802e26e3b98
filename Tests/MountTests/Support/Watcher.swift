import Foundation
import Glibc
import TestSupport

/// A program that runs beside a test and is read while it runs (`syncfs-mount events`,
/// `inotifywait -m`): its output goes to temporary files the test polls. Always `stop()` it
/// (or `wait` for it); both kill it after their timeout, so no test can hang on one.
final class Watcher: @unchecked Sendable {
    let argv: [String]
    let pid: pid_t
    private let outPath: String
    private let errPath: String
    private var status: Int32?

    init(_ argv: [String]) throws {
        self.argv = argv
        let tag = "\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        outPath = "/tmp/syncfs-watcher-\(tag).out"
        errPath = "/tmp/syncfs-watcher-\(tag).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let arguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        var child: pid_t = 0
        let result = posix_spawnp(&child, argv[0], &actions, &attributes, arguments, environ)
        guard result == 0 else {
            throw TestFolderError(message: "cannot start \(argv[0]): \(errnoName(result))")
        }
        pid = child
    }

    deinit {
        _ = stop()
        unlink(outPath)
        unlink(errPath)
    }

    var output: String { (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "" }
    var errors: String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }
    var lines: [String] { output.split(separator: "\n").map(String.init) }

    /// Waits until standard error contains `text` (a readiness line).
    func waitForErrors(containing text: String, timeout: Double = 20) -> Bool {
        waitUntil(timeout: timeout) { errors.contains(text) }
    }

    /// Waits for the exit (killing it after `timeout` s); its exit status, or 128+signal.
    @discardableResult
    func wait(timeout: Double = 60) -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        if let exited = TestFolder.waitForExit(pid, timeout: timeout) {
            raw = exited
        } else {
            kill(pid, SIGKILL)
            raw = TestFolder.waitForExit(pid, timeout: 10) ?? 0x09
        }
        let code: Int32 = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        status = code
        return code
    }

    /// SIGTERM, then waits for the exit.
    @discardableResult
    func stop() -> Int32 {
        if let status { return status }
        kill(pid, SIGTERM)
        return wait(timeout: 10)
    }
}

/// One line of `syncfs-mount events` (doc/CLI.md).
struct EventLine: Decodable, CustomStringConvertible {
    var time: String
    var kind: String
    var path: String?
    var oldPath: String?
    var origin: String?
    var fileID: String?
    var type: String?
    /// `offline` and `rules-error`: what is wrong.
    var message: String?

    /// `kind path` (`<- oldPath`) for expectations.
    var description: String { "\(kind) \(path ?? "")" + (oldPath.map { " <- \($0)" } ?? "") }

    static func parse(_ lines: [String]) -> [EventLine] {
        lines.compactMap { try? JSONDecoder().decode(EventLine.self, from: Data($0.utf8)) }
    }
}

extension Watcher {
    /// `syncfs-mount events ARGS…`, started and watching (its `watching` line seen).
    static func events(_ arguments: [String]) throws -> Watcher {
        let watcher = try Watcher([try TestFolder.binaryPath(), "events"] + arguments)
        guard watcher.waitForErrors(containing: "events: watching") else {
            watcher.stop()
            throw TestFolderError(message: "events \(arguments) never started watching: \(watcher.errors)")
        }
        return watcher
    }
}
