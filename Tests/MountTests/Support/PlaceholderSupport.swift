import Foundation
import Glibc
import TestSupport
import Testing

// Helpers for the placeholder tests (doc/SEMANTICS.md, "Placeholders, downloads and the local
// cache"; doc/CLI.md, `status`, `pin`, `unpin`, `evict`, `download`): the virtual `user.syncfs.*`
// extended attributes, the control subcommands, and threads that read at once.

// MARK: - Virtual extended attributes

/// The value of a virtual attribute (`user.syncfs.state`, `.pinned`, `.progress`, `.error`) as
/// text, read by name with getxattr (they are never listed).
func syncfsXattr(_ path: String, _ name: String) throws -> String {
    String(decoding: try getXattr(path, "user.syncfs." + name), as: UTF8.self)
}

/// `user.syncfs.state` of `path`: `online`, `downloading`, `local`, `modified`, `uploading`, `error`.
func syncfsState(_ path: String) throws -> String { try syncfsXattr(path, "state") }

/// `user.syncfs.pinned` of `path`: `1`, `inherited` or `0`.
func syncfsPinned(_ path: String) throws -> String { try syncfsXattr(path, "pinned") }

/// Sets `user.syncfs.pinned` to `value` (`1`, `0`, `true`, …).
func setPinned(_ path: String, _ value: String) throws {
    try setXattr(path, "user.syncfs.pinned", bytes(value))
}

/// `user.syncfs.NAME` of `path`, or why it could not be read in parentheses: for expectations
/// that should not end the test when the attribute is missing.
func describeXattr(_ path: String, _ name: String) -> String {
    do {
        return try syncfsXattr(path, name)
    } catch {
        return "(\(error))"
    }
}

/// `user.syncfs.state` of `path`, or why it could not be read (see `describeXattr`).
func describeState(_ path: String) -> String { describeXattr(path, "state") }

/// `user.syncfs.pinned` of `path`, or why it could not be read (see `describeXattr`).
func describePinned(_ path: String) -> String { describeXattr(path, "pinned") }

/// How long a file may take to be marked downloaded (`local`) after reads of all its bytes
/// returned: the mark follows the download's fsync of the cache file (doc/SEMANTICS.md, "A read
/// downloads"), a moment later — on a loaded machine, seconds.
let markedDownloadedWithin = 10.0

/// Expects `user.syncfs.state` of each path to be one of `states` — now, or within `timeout`
/// seconds for a state the daemon reaches by itself; records one issue listing the paths that
/// are not otherwise. Returns whether all matched.
@discardableResult
func expectStates(
    _ paths: [String], in states: Set<String>, _ context: String, timeout: Double = 0,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    var wrong: [String] = []
    let matched = waitUntil(timeout: timeout) {
        wrong = paths.compactMap { path in
            let state = describeState(path)
            return states.contains(state) ? nil : "\(path): \(state)"
        }
        return wrong.isEmpty
    }
    if matched { return true }
    let expected = states.sorted().joined(separator: "/")
    let examples = wrong.prefix(10).joined(separator: "; ")
    Issue.record(
        "\(context): \(wrong.count) of \(paths.count) entries are not \(expected): \(examples)",
        sourceLocation: sourceLocation)
    return false
}

/// ENETDOWN is missing from `errnoName`'s table (Support/Posix.swift).
func placeholderErrnoName(_ code: Int32) -> String {
    code == ENETDOWN ? "ENETDOWN" : errnoName(code)
}

// MARK: - The control subcommands

extension TestFolder {
    /// Runs `syncfs-mount ARGUMENTS…` (e.g. `["pin", path]`) and returns its result.
    func runCommand(_ arguments: [String], timeout: Double = 120) throws -> ModelProcessResult {
        ModelProcess.run([try Self.binaryPath()] + arguments, timeout: timeout)
    }

    /// Runs `syncfs-mount ARGUMENTS…` and expects exit status `status`; records the output (and
    /// the daemon's log) otherwise. Returns the result.
    @discardableResult
    func expectCommand(
        _ arguments: [String], status expected: Int32 = 0, timeout: Double = 120,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ModelProcessResult {
        let result = try runCommand(arguments, timeout: timeout)
        if result.status != expected || result.timedOut {
            Issue.record(
                "expected exit status \(expected): \(result)\n---- daemon log:\n\(daemonLog())",
                sourceLocation: sourceLocation)
        }
        return result
    }

    /// `bytesDownloaded` of this mount's status (since the mount).
    func bytesDownloaded() throws -> Int64 { try syncStatus().bytesDownloaded }
}

// MARK: - Trees of files

/// Writes each file of `files` (relative path → content) under `root`, making the directories
/// first.
func writeFiles(_ files: [String: [UInt8]], under root: String) throws {
    var directories = Set<String>()
    for path in files.keys {
        var parts = path.split(separator: "/").dropLast()
        while !parts.isEmpty {
            directories.insert(parts.joined(separator: "/"))
            parts = parts.dropLast()
        }
    }
    for directory in directories.sorted(by: { $0.count < $1.count }) {
        try makeDirectory(root + "/" + directory)
    }
    for (path, content) in files.sorted(by: { $0.key < $1.key }) {
        try writeFile(root + "/" + path, content)
    }
}

/// Waits until every file of `files` exists under `root` with its size (lstat only: nothing is
/// read). Records an issue naming what is missing otherwise.
@discardableResult
func expectNamesArrive(
    _ files: [String: [UInt8]], under root: String, timeout: Double = 20, _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    var missing: [String] = []
    let arrived = waitUntil(timeout: timeout) {
        missing = files.keys.sorted().filter { path in
            guard let info = try? lstatPath(root + "/" + path) else { return true }
            return Int(info.st_size) != files[path]!.count
        }
        return missing.isEmpty
    }
    if !arrived {
        let message =
            "\(context): \(missing.count) of \(files.count) files did not arrive with their size within "
            + "\(Int(timeout)) s: \(missing.prefix(10))"
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }
    return arrived
}

/// Expects every file of `files` to read back under `root` as its content; records one issue per
/// file that does not (up to 10). Returns whether all did.
@discardableResult
func expectContents(
    _ files: [String: [UInt8]], under root: String, _ context: String,
    sourceLocation: SourceLocation = #_sourceLocation
) -> Bool {
    var wrong: [String] = []
    for (path, content) in files.sorted(by: { $0.key < $1.key }) {
        do {
            let read = try readFile(root + "/" + path)
            if let offset = firstDifference(read, content) {
                wrong.append("\(path): differs from byte \(offset) (\(read.count) vs \(content.count) bytes)")
            }
        } catch {
            wrong.append("\(path): \(error)")
        }
    }
    for line in wrong.prefix(10) { Issue.record("\(context): \(line)", sourceLocation: sourceLocation) }
    return wrong.isEmpty
}

// MARK: - Threads

/// A value shared by threads, behind a lock.
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try lock.withLock { try body(&value) }
    }

    var current: Value { lock.withLock { value } }
}

/// Runs `body(0)`, …, `body(count - 1)` on `count` threads of their own, released together, and
/// waits up to `timeout` seconds for all. Returns false if some had not finished by then (they
/// keep running; `body` must only touch what outlives the call).
func runOnThreads(_ count: Int, timeout: Double, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let group = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            start.wait()
            body(index)
            group.leave()
        }
    }
    for _ in 0..<count { start.signal() }
    return group.wait(timeout: .now() + timeout) == .success
}

/// The outcome of one `read` call made with a deadline.
enum TimedRead {
    /// It returned `count` bytes (or 0 at end-of-file) after `seconds`.
    case bytes([UInt8], seconds: Double)
    /// It failed with `errno` after `seconds`.
    case failed(Int32, seconds: Double)
    /// It had not returned after the deadline (the thread keeps it, and the descriptor, until it does).
    case blocked
}

/// Opens `path` read-only and makes one `pread` of `count` bytes at `offset` on a thread of its
/// own, waiting at most `deadline` seconds for it. An `open` failure is `.failed` too.
func timedRead(_ path: String, count: Int, offset: off_t = 0, deadline: Double) -> TimedRead {
    let outcome = LockedValue<TimedRead?>(nil)
    let finished = runOnThreads(1, timeout: deadline) { _ in
        let started = Date()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            outcome.withLock { $0 = .failed(code, seconds: Date().timeIntervalSince(started)) }
            return
        }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, count, offset) }
        let code = errno
        let seconds = Date().timeIntervalSince(started)
        outcome.withLock {
            $0 = got < 0 ? .failed(code, seconds: seconds) : .bytes(Array(buffer[0..<got]), seconds: seconds)
        }
    }
    return finished ? (outcome.current ?? .blocked) : .blocked
}

// MARK: - The suite

/// The placeholder tests (doc/SEMANTICS.md, "Placeholders, downloads and the local
/// cache"), one nested suite per concern in `Tests/MountTests/Placeholder*.swift`. Mount A writes,
/// mount B is the device that attaches: its files stay placeholders until read, pinned or
/// downloaded. The suites run one at a time (they move tens of MiB on a shared 2-core machine).
@Suite(.serialized) enum PlaceholderTests {}
