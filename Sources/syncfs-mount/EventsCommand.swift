import ArgumentParser
import Foundation
import Glibc
import SyncBackend
import SyncFS

/// `events MOUNTPOINT [PATH] [--since CURSOR | --snapshot] [--state STATES] [--count N]
/// [--timeout S]`: one JSON line per change, each with its cursor.
struct EventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print one JSON line per change in a mounted folder (local and remote changes).",
        discussion: """
            PATH (absolute, inside the mount, or relative to MOUNTPOINT) watches one entry; with a \
            trailing / it watches everything below that folder. Besides changes: online and offline \
            (the container answers again / stopped answering; every watcher gets them), downloaded \
            (a file's content is all here), rules-error (the rules file has an error). Every event carries its \
            cursor; --since CURSOR first replays the events after it from the mount's journal (the last \
            100,000 events of the last 7 days, kept across restarts); a cursor the journal cannot continue \
            gets {"kind":"reset"} and the snapshot. --snapshot first lists every entry ({"kind":"entry"}: path, \
            fileID, type, size, state, progress), then {"kind":"snapshot-end"} with its cursor; live events \
            follow with no gap and no duplicate. --state keeps entries and events in those states. Once \
            watching, says so on standard error (with the cursor); standard output carries only events, one \
            line each, written at once. Exit codes: \
            0 on --count events, at the end of --timeout, on SIGINT/SIGTERM or a closed output; 65 \
            MOUNTPOINT has no running SyncFS daemon or PATH is outside it; 75 the daemon stopped, \
            the stream overflowed (more than 10,000 events behind; the last line says \
            {"kind":"overflow"}), or --timeout ended before --count events.
            """
    )

    @Argument(help: "The mount point of a SyncFS folder, or a path inside it (then watched, as PATH).")
    var mountpoint: String

    @Argument(help: "An entry to watch, or a folder ending in / (default: everything).")
    var path: String?

    @Option(help: "Replay the events after this cursor (a `cursor` of an earlier line) first.")
    var since: String?

    @Flag(help: "List every entry (below PATH) first, then snapshot-end, then the live events.")
    var snapshot = false

    @Option(
        help: ArgumentHelp(
            "Only entries and events in these states, comma-separated: "
                + ContentState.allCases.map(\.rawValue).joined(separator: ", ") + ".",
            valueName: "states"))
    var state: String?

    @Option(help: "Exit after this many lines.")
    var count: Int?

    @Option(help: "Exit after this many seconds.")
    var timeout: Double?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let timeout, timeout <= 0 { throw ValidationError("--timeout must be positive") }
        if since != nil && snapshot { throw ValidationError("--since and --snapshot cannot be combined") }
        for name in stateNames ?? [] where ContentState(rawValue: name) == nil {
            let valid = ContentState.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--state: unknown state \"\(name)\" (valid: \(valid))")
        }
    }

    /// `--state`'s names (checked by `validate`: each a `status` state).
    private var stateNames: [String]? {
        state.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }

    func run() throws {
        // Scripts stop a watcher with a signal or by closing the pipe: both are a normal end.
        signal(SIGINT) { _ in _exit(ExitStatus.success.rawValue) }
        signal(SIGTERM) { _ in _exit(ExitStatus.success.rawValue) }
        signal(SIGPIPE, SIG_IGN)
        let mount: MountedPath
        let watched: String?
        let socket: Int32
        do throws(MountError) {
            mount = try MountedPath.resolve(mountpoint)
            if let path {
                watched = try Self.relative(path, in: mount.mountpoint)
            } else if !mount.relative.isEmpty {
                // A path inside the mount (as `status` takes it): watch that entry, and everything
                // below it if it is a folder.
                var info = stat()
                let folder = stat(mountpoint, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
                watched = mount.relative + (folder ? "/" : "")
            } else {
                watched = nil
            }
            var request = ControlRequest(.events, path: watched)
            request.since = since
            request.snapshot = snapshot ? true : nil
            request.states = stateNames
            switch ControlClient.openStream(request, mountpoint: mount.mountpoint) {
            case .success(let connected): socket = connected
            case .failure(.unsafe(let reason)): throw MountError(.permissionDenied, reason)
            case .failure(let failure): throw MountError(.badInput, "\(failure)")
            }
        } catch {
            throw fail(error)
        }
        defer { close(socket) }
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        var reader = LineReader(socket)
        // The daemon's answer: watching, or why not.
        guard case .line(let first) = reader.next(until: deadline),
            let answer = try? JSONDecoder().decode(ControlReply.self, from: Data(first))
        else { throw fail(MountError(.busy, "the SyncFS daemon of \(mount.mountpoint) did not answer")) }
        if let error = answer.error { throw fail(MountError(.badInput, error)) }
        let display = (answer.watching ?? "").isEmpty ? mount.mountpoint : mount.mountpoint + "/" + answer.watching!
        printError("events: watching \(display)" + (answer.cursor.map { " (cursor \($0))" } ?? ""))
        var seen = 0
        while true {
            switch reader.next(until: deadline) {
            case .line(let line):
                var output = line
                output.append(10)
                guard Self.writeOut(output) else { throw ExitCode(.success) }
                if String(decoding: line, as: UTF8.self).contains("\"kind\":\"overflow\"") {
                    throw fail(
                        MountError(.busy, "more than 10,000 events behind: later events were dropped; watch again"))
                }
                seen += 1
                if let count, seen >= count { return }
            case .end:
                throw fail(MountError(.busy, "the SyncFS daemon of \(mount.mountpoint) stopped (unmounted)"))
            case .timedOut:
                if let count, seen < count {
                    throw fail(
                        MountError(.busy, "\(seen) of \(HumanUnits.count(count, "event")) within \(timeout ?? 0) s"))
                }
                return
            }
        }
    }

    /// PATH relative to the mount point ("dir/file", or "dir/" for a folder; "" the root).
    static func relative(_ path: String, in mountpoint: String) throws(MountError) -> String {
        let folder = path.hasSuffix("/") || path == "." || path.hasSuffix("/.")
        let absolute = path.hasPrefix("/") ? path : mountpoint + "/" + path
        let standardized = (absolute as NSString).standardizingPath
        var candidates = [standardized]
        if let resolved = realpath(standardized, nil) {
            candidates.append(String(cString: resolved))
            free(resolved)
        }
        for candidate in candidates {
            if candidate == mountpoint { return folder ? "/" : "" }
            if candidate.hasPrefix(mountpoint + "/") {
                let relative = String(candidate.dropFirst(mountpoint.count + 1))
                return folder ? relative + "/" : relative
            }
        }
        throw MountError(.badInput, "\(path) is outside the mount \(mountpoint)")
    }

    /// Writes a whole line to standard output (unbuffered: each line leaves at once, even to a
    /// pipe). False once the reader has gone (EPIPE).
    static func writeOut(_ bytes: [UInt8]) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            written += count
        }
        return true
    }
}

/// Lines from a socket, with a deadline.
private struct LineReader {
    enum Next {
        case line([UInt8])
        case end
        case timedOut
    }

    let descriptor: Int32
    var buffer: [UInt8] = []

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    mutating func next(until deadline: Date?) -> Next {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return .line(line)
            }
            var wait: Int32 = -1
            if let deadline {
                let remaining = deadline.timeIntervalSinceNow
                if remaining <= 0 { return .timedOut }
                wait = Int32(min(remaining * 1000, 3_600_000)) + 1
            }
            var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, wait)
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { continue }
            let count = read(self.descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return .end }
            buffer.append(contentsOf: chunk[..<count])
        }
    }
}
