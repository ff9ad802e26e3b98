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
        case .stalled(let status): throw fail(MountError(.busy, SyncWaiter.stallMessage(status)))
        }
    }
}

/// Waits for a daemon's queue to drain, with a progress line.
enum SyncWaiter {
    enum Result {
        case done
        case notMounted
        case stalled(SyncStatus)
    }

    static func drain(mountpoint: String, timeout: Double, progress: Bool) -> Result {
        guard var status = ControlServer.ask("sync", mountpoint: mountpoint) else { return .notMounted }
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
            guard let next = ControlServer.ask("sync", mountpoint: mountpoint) else { return .notMounted }
            status = next
        }
        if progress && printed { printError("syncing: done") }
        return .done
    }

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
