import ArgumentParser
import Foundation
import SyncFS

/// `sync`: uploads everything queued now and waits until the container has it.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Upload every queued change now and wait until the container has them all.",
        discussion: """
            Prints what is left on standard error while it waits. Exit codes: 0 everything is \
            uploaded; 65 MOUNTPOINT is not a SyncFS mount; 75 the container stayed unreachable or \
            changes kept failing for --timeout seconds (the queue is kept).
            """
    )

    @Argument(help: "The mount point of a SyncFS folder.")
    var mountpoint: String

    @Option(help: "Give up after this many seconds without progress.")
    var timeout: Double = 60

    func run() throws {
        let path = absolutePath(mountpoint)
        switch SyncWaiter.drain(mountpoint: path, timeout: timeout, progress: true) {
        case .done: return
        case .notMounted: throw fail(MountError(.badInput, "\(path) is not a SyncFS mount with a running daemon"))
        case .refused(let reason): throw fail(MountError(.permissionDenied, reason))
        case .stalled(let status): throw fail(MountError(.busy, SyncWaiter.stallMessage(status)))
        }
    }
}

/// Waits for a daemon's queue to drain, with a progress line.
enum SyncWaiter {
    enum Result {
        case done
        case notMounted
        /// The registry or socket is not trusted, or the daemon refused this user (the reason).
        case refused(String)
        case stalled(SyncStatus)
    }

    static func drain(mountpoint: String, timeout: Double, progress: Bool) -> Result {
        var status: SyncStatus
        switch askSync(mountpoint) {
        case .success(let answer): status = answer
        case .failure(let stop): return stop.result
        }
        var lastProgress = Date()
        var lastPending = (status.pendingEntries, status.pendingBytes)
        var printed = false
        while status.pendingEntries > 0 {
            if progress {
                let line =
                    "syncing: \(status.pendingEntries) changes, \(format(status.pendingBytes)) left"
                    + (status.lastContainerError.map { " (container: \($0))" } ?? "")
                printError(line)
                printed = true
            }
            if (status.pendingEntries, status.pendingBytes) != lastPending {
                lastPending = (status.pendingEntries, status.pendingBytes)
                lastProgress = Date()
            }
            if Date().timeIntervalSince(lastProgress) > timeout { return .stalled(status) }
            Thread.sleep(forTimeInterval: printed ? 0.5 : 0.05)
            switch askSync(mountpoint) {
            case .success(let answer): status = answer
            case .failure(let stop): return stop.result
            }
        }
        if progress && printed { printError("syncing: done") }
        return .done
    }

    /// One `sync` request: the status, or how drain ends.
    private static func askSync(_ mountpoint: String) -> Swift.Result<SyncStatus, ResultError> {
        switch ControlClient.ask(ControlRequest(.sync), mountpoint: mountpoint) {
        case .success(let reply):
            if let status = reply.status { return .success(status) }
            return .failure(ResultError(result: reply.error.map { .refused($0) } ?? .notMounted))
        case .failure(.unsafe(let reason)): return .failure(ResultError(result: .refused(reason)))
        case .failure(.noDaemon): return .failure(ResultError(result: .notMounted))
        }
    }

    /// A `Result` that ends a drain early, carried as an error.
    struct ResultError: Error { let result: Result }

    static func stallMessage(_ status: SyncStatus) -> String {
        let reason =
            status.lastContainerError.map { "the container is unreachable (\($0))" }
            ?? status.failing.first.map { "changes keep failing (\($0.reason))" } ?? "no progress"
        return "\(reason); \(status.pendingEntries) changes (\(format(status.pendingBytes))) stay queued"
    }

    static func format(_ bytes: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: bytes, countStyle: .binary)
    }
}
