import ArgumentParser
import Foundation
import SyncFS

/// `sync`: uploads everything queued now and waits until the container has it.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Upload every queued change now and wait until the container has them all.",
        discussion: """
            PATH is the mount point or anything inside the mount (the whole mount is synced). \
            Shows progress on standard error while it waits. Exit codes: 0 everything is \
            uploaded and the cache is within its budget again (what was just uploaded is evicted \
            as far as --cache-size needs); 65 PATH is not in a SyncFS mount; 75 the container stayed unreachable or \
            changes kept failing for --timeout seconds (the queue is kept), or the mass-delete \
            guard holds the uploads (at once, without waiting: see `release` and `discard`), or \
            the mount is paused (at once: see `resume`).
            """
    )

    @Argument(help: "The mount point of a SyncFS folder, or a path inside it.")
    var mountpoint: String

    @Option(help: "Give up after this many seconds without progress.")
    var timeout: Double = 60

    func run() throws {
        let mount: MountedPath
        do {
            mount = try MountedPath.resolve(mountpoint)
        } catch {
            throw fail(error)
        }
        let path = mount.mountpoint
        switch SyncWaiter.drain(mountpoint: path, timeout: timeout, progress: true) {
        case .done(let queuedAtStart):
            if queuedAtStart == 0 { print("Nothing to sync: the container has every change.") }
        case .notMounted: throw fail(MountError(.badInput, "\(path) is not a SyncFS mount with a running daemon"))
        case .refused(let reason): throw fail(MountError(.permissionDenied, reason))
        case .stalled(let status): throw fail(MountError(.busy, SyncWaiter.stallMessage(status)))
        }
    }
}

/// Waits for a daemon's queue to drain, with a progress line (`ProgressLine`) on standard error.
enum SyncWaiter {
    enum Result {
        /// The queue is empty; it held `queuedAtStart` changes when asked first.
        case done(queuedAtStart: Int)
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
        let queuedAtStart = status.pendingEntries
        let line = ProgressOutput.line()
        var totals = DrainTotals()
        var lastProgress = Date()
        var lastPending = (status.pendingEntries, status.uploadBytesLeft ?? status.pendingBytes)
        var shown = false
        var polls = 0
        while status.pendingEntries > 0 || status.massDeleteGuard?.held == true || status.paused != nil {
            // Held by the mass-delete guard or paused: only `release` or `discard`, or `resume`,
            // ends it; never wait.
            if status.massDeleteGuard?.held == true || status.paused != nil {
                line.finish(nil)
                return .stalled(status)
            }
            let left = status.uploadBytesLeft ?? status.pendingBytes
            totals.observe(left: left)
            // The first moments of a small sync print nothing.
            if progress && (shown || polls >= 4) {
                line.update(
                    ProgressLine.Snapshot(
                        verb: "syncing", itemsLeft: status.pendingEntries, noun: "change", done: totals.done,
                        total: totals.total, note: note(status)))
                shown = true
            }
            if (status.pendingEntries, left) != lastPending {
                lastPending = (status.pendingEntries, left)
                lastProgress = Date()
            }
            if Date().timeIntervalSince(lastProgress) > timeout {
                line.finish(nil)
                return .stalled(status)
            }
            polls += 1
            // Each answer redraws the progress line, so the status is asked for at that pace.
            Thread.sleep(forTimeInterval: polls < 4 ? 0.05 : 0.25)
            switch askSync(mountpoint) {
            case .success(let answer): status = answer
            case .failure(let stop):
                line.finish(nil)
                return stop.result
            }
        }
        if shown { line.finish("syncing: done") }
        return .done(queuedAtStart: queuedAtStart)
    }

    /// What holds the queue back, if anything: the outage, a busy container, failing changes.
    static func note(_ status: SyncStatus) -> String? {
        if !status.online {
            return "offline" + (status.offlineSince.map { " since \(LocalTime.local($0))" } ?? "") + ", waiting"
        }
        if !status.failing.isEmpty { return "\(HumanUnits.count(status.failing.count, "change")) failing" }
        return nil
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
        let reason: String
        if let paused = PauseLine.text(status.paused) {
            reason = "the mount is \(paused); `syncfs-mount resume` lets the queue go"
        } else if let held = status.massDeleteGuard, held.held {
            let count =
                held.heldChanges.map {
                    " (\(HumanUnits.count($0, "deletion or replacement", "deletions or replacements")))"
                } ?? ""
            reason =
                "the mass-delete guard holds the uploads\(count); `syncfs-mount release` lets them go, "
                + "`syncfs-mount discard` undoes them here"
        } else if !status.online {
            reason =
                "the container is unreachable"
                + (status.offlineSince.map { " (offline since \(LocalTime.local($0)))" } ?? "")
        } else if let failing = status.failing.first {
            reason = "changes keep failing (\(failing.reason))"
        } else if let error = status.lastContainerError {
            reason = "the container does not take them (\(error))"
        } else {
            reason = "no progress"
        }
        let waiting = HumanUnits.count(status.pendingEntries, "change")
        return TerminalText.safe("\(reason); \(waiting) (\(HumanUnits.bytes(status.pendingBytes))) stay queued")
    }
}
