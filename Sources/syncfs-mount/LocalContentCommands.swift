import ArgumentParser
import Foundation
import Glibc
import SyncFS

/// `status [PATH] [--json] [--ignored]`: the whole mount, or one path.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the sync state of a mount (PATH is its mount point) or of one path inside it.",
        discussion: "Exit 65 when PATH is not in a SyncFS mount with a running daemon, or does not exist."
    )

    @Argument(help: "A mount point, or a path inside a mount (default: the current directory).")
    var path: String = "."

    @Flag(help: "Print one line of JSON.")
    var json = false

    @Flag(help: "Also list every ignored path of the mount with the ignore file and line that decided it.")
    var ignored = false

    func run() throws {
        let target: MountedPath
        let reply: ControlReply
        do {
            target = try MountedPath.resolve(path)
            reply = try target.ask(target.relative.isEmpty ? .status : .pathStatus, ignored: ignored ? true : nil)
        } catch {
            throw fail(error)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        if let status = reply.status {
            let server = ServerChoice.current(mountpoint: target.mountpoint)
            if json { return print(ServerChoice.json(status, server: server, encoder: encoder)) }
            print(StatusReport.mount(status, mountpoint: target.mountpoint), terminator: "")
            if let server { print(TerminalText.safe(server.statusLine)) }
        } else if let status = reply.path {
            if json { return print(String(decoding: (try? encoder.encode(status)) ?? Data(), as: UTF8.self)) }
            print(StatusReport.path(status, display: target.display), terminator: "")
        }
    }
}

/// `pin PATH… [--no-wait]`.
struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Keep files always downloaded (a folder's pin covers everything below it, now and later).",
        discussion: """
            Then downloads what is not yet local and waits, unless --no-wait. Exit 75 if the \
            container is unreachable or nothing progresses for --timeout seconds (the pin stays).
            """
    )

    @Argument(help: "Files or folders inside a SyncFS mount.")
    var paths: [String]

    @Flag(help: "Return at once; the download goes on in the background.")
    var noWait = false

    @Option(help: "Give up waiting after this many seconds without progress.")
    var timeout: Double = 60

    func run() throws {
        do {
            let targets = try paths.map { path throws(MountError) in try MountedPath.resolve(path) }
            for target in targets {
                _ = try target.ask(.pin)
                if !noWait { _ = try target.ask(.download) }
            }
            if !noWait { try DownloadWaiter.wait(for: targets, timeout: timeout) }
        } catch {
            throw fail(error)
        }
    }
}

/// `unpin PATH…`.
struct UnpinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin",
        abstract: "Let pinned files be evicted again (they stay downloaded until then).",
        discussion: "Unpinning something whose folder is pinned is refused (exit 1): unpin the folder."
    )

    @Argument(help: "Files or folders inside a SyncFS mount.")
    var paths: [String]

    func run() throws {
        var refused = false
        for path in paths {
            do throws(MountError) {
                let target = try MountedPath.resolve(path)
                guard
                    let reply = ControlServer.ask(
                        ControlRequest(.unpin, path: target.relative), mountpoint: target.mountpoint)
                else { throw MountError(.badInput, "no SyncFS daemon answers for \(target.mountpoint)") }
                if let error = reply.error {
                    printError("syncfs-mount: cannot unpin \(target.display): \(error)")
                    refused = true
                }
            } catch {
                throw fail(error)
            }
        }
        if refused { throw ExitCode(.failure) }
    }
}

/// `evict PATH…`.
struct EvictCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict",
        abstract: "Free the local content of files (they become placeholders, downloaded again when read).",
        discussion: """
            Files with changes not yet uploaded, open files and pinned files are kept: each is named \
            on standard error, and the exit code is 1.
            """
    )

    @Argument(help: "Files or folders inside a SyncFS mount.")
    var paths: [String]

    func run() throws {
        var files = 0
        var bytes: Int64 = 0
        var refused = 0
        do {
            for path in paths {
                let target = try MountedPath.resolve(path)
                guard let report = try target.ask(.evict).action else { continue }
                files += report.files
                bytes += report.bytes
                for refusal in report.refused {
                    printError(
                        TerminalText.safe("syncfs-mount: kept \(target.mountpoint)/\(refusal.path): \(refusal.reason)"))
                }
                refused += report.refused.count
            }
        } catch {
            throw fail(error)
        }
        print(
            "evicted \(HumanUnits.count(files, "file")), \(HumanUnits.bytes(bytes)) freed"
                + (refused > 0 ? "; \(refused) kept" : ""))
        if refused > 0 { throw ExitCode(.failure) }
    }
}

/// `download PATH…`.
struct DownloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download every placeholder at or below each PATH and wait until all are local.",
        discussion: "Exit 75 if the container stays unreachable or nothing progresses for --timeout seconds."
    )

    @Argument(help: "Files or folders inside a SyncFS mount.")
    var paths: [String]

    @Option(help: "Give up after this many seconds without progress.")
    var timeout: Double = 60

    func run() throws {
        do {
            let targets = try paths.map { path throws(MountError) in try MountedPath.resolve(path) }
            for target in targets { _ = try target.ask(.download) }
            try DownloadWaiter.wait(for: targets, timeout: timeout)
        } catch {
            throw fail(error)
        }
    }
}

/// Waits until every placeholder below the targets is downloaded, with progress on standard
/// error (`ProgressOutput`): bytes local of the total, percentage, rate and time left.
enum DownloadWaiter {
    static func wait(for targets: [MountedPath], timeout: Double) throws(MountError) {
        let line = ProgressOutput.line()
        var lastLocal: Int64 = -1
        var lastProgress = Date()
        var shown = false
        var polls = 0
        while true {
            var remaining = 0
            var local: Int64 = 0
            var total: Int64 = 0
            var offline: SyncStatus?
            for target in targets {
                guard let status = try target.ask(.pathStatus).path else { continue }
                local += status.localBytes
                total += status.totalBytes ?? status.size
                if let files = status.files {
                    remaining += files.online + files.downloading
                } else if status.state == .online || status.state == .downloading {
                    remaining += 1
                }
            }
            for mountpoint in Set(targets.map(\.mountpoint)) {
                if let mount = ControlServer.ask(ControlRequest(.status), mountpoint: mountpoint)?.status,
                    !mount.online
                {
                    offline = mount
                }
            }
            if remaining == 0 {
                if shown { line.finish("downloading: done") }
                return
            }
            if local != lastLocal {
                lastLocal = local
                lastProgress = Date()
            }
            if shown || polls >= 4 {
                line.update(
                    ProgressLine.Snapshot(
                        verb: "downloading", itemsLeft: remaining, noun: "file", done: local, total: total,
                        note: offline.flatMap { SyncWaiter.note($0) }))
                shown = true
            }
            let stalledFor = Date().timeIntervalSince(lastProgress)
            if stalledFor > timeout || (offline != nil && stalledFor > 10) {
                line.finish(nil)
                throw MountError(
                    .busy,
                    (offline != nil ? "the container is unreachable" : "no progress for \(Int(stalledFor)) s")
                        + "; \(HumanUnits.count(remaining, "file")) not downloaded")
            }
            polls += 1
            // Each answer redraws the progress line, so the status is asked for at that pace.
            Thread.sleep(forTimeInterval: polls < 4 ? 0.05 : 0.25)
        }
    }
}

/// Human-readable `status`.
enum StatusReport {
    /// The first line: is it safe to close the laptop? "up to date" only when online, caught up
    /// with the feed and nothing is queued.
    static func headline(_ status: SyncStatus) -> String {
        let waiting =
            status.pendingEntries > 0
            ? "\(HumanUnits.count(status.pendingEntries, "change")) waiting (\(HumanUnits.bytes(status.pendingBytes)))"
            : nil
        // Paused: nothing goes either way, whatever else holds (`resume` ends it).
        if let paused = PauseLine.text(status.paused) {
            return "\(paused), " + (waiting ?? "no changes waiting")
        }
        guard status.online else {
            let since = status.offlineSince.map { " since \(LocalTime.local($0))" } ?? ""
            return "offline\(since), " + (waiting ?? "no changes waiting")
        }
        if let since = status.serverStorageUnavailableSince {
            return "server storage unavailable since \(LocalTime.local(since)), " + (waiting ?? "no changes waiting")
        }
        if status.massDeleteGuard?.held == true {
            return "online, uploads held by the mass-delete guard, " + (waiting ?? "no changes waiting")
        }
        if let waiting, AccessStatusLine.isReadOnly(status.access) { return "online, read-only, " + waiting }
        if let waiting { return "online, " + waiting + (status.feedCaughtUp ? "" : ", catching up") }
        if status.upToDate ?? status.feedCaughtUp { return "online, up to date" }
        return "online, catching up"
    }

    static func mount(_ status: SyncStatus, mountpoint: String) -> String {
        var lines: [String] = []
        lines.append("\(mountpoint): " + headline(status))
        let files = status.files
        lines.append(
            "files: \(files.local) local, \(files.online) online only, \(files.modified) modified"
                + (files.downloading + files.uploading > 0
                    ? ", \(files.downloading) downloading, \(files.uploading) uploading" : "")
                + (files.error > 0 ? ", \(files.error) failing" : "") + " (\(files.pinned) pinned)")
        if status.conflicts > 0 {
            lines.append(
                "conflicts: \(status.conflicts) unresolved (syncfs-mount conflicts \(mountpoint))")
        }
        lines.append(
            "cache: \(HumanUnits.bytes(status.cachedBytes))"
                + (status.cacheBudget.map { " of \(HumanUnits.bytes($0)) budget" } ?? ""))
        if let damaged = status.damagedCacheCopies, damaged > 0 {
            lines.append(
                "damaged cached copies: \(damaged) since the mount (discarded, downloaded again when read; see the log)"
            )
        }
        lines.append(
            "queue: \(HumanUnits.count(status.pendingEntries, "change")), \(HumanUnits.bytes(status.pendingBytes))")
        let terminal = isatty(STDOUT_FILENO) != 0
        for transfer in status.transfers {
            lines.append(
                "\(transfer.direction == .download ? "downloading" : "uploading") \(transfer.path) "
                    + progressText(done: transfer.done, total: transfer.total, bar: terminal))
        }
        if let line = GuardStatusLine.text(status.massDeleteGuard, mountpoint: mountpoint) { lines.append(line) }
        if let line = BandwidthStatusLine.text(status.bandwidth) { lines.append(line) }
        if let line = AccessStatusLine.text(status.access, waiting: status.pendingEntries) { lines.append(line) }
        if let encryption = status.container?.encryption { lines.append("encryption: \(encryption)") }
        if let alarm = status.container?.alarm {
            lines.append("ALARM: \(alarm); nothing is applied or uploaded (doc/CRYPTO.md)")
        }
        if status.paused != nil {
            lines.append(
                "paused: nothing is uploaded and no remote change is read until `syncfs-mount resume \(mountpoint)`"
                    + (status.paused?.all == true ? "; reads of placeholders fail (ENETDOWN)" : ""))
        }
        if let locks = status.locks, locks.held + locks.lost > 0 {
            lines.append(
                "locks: \(locks.held) held on this mount"
                    + (locks.localOnly > 0 ? ", \(locks.localOnly) local only (not claimed at the container yet)" : "")
                    + (locks.lost > 0 ? ", \(locks.lost) lost since the mount (lock-lost events)" : ""))
        }
        if status.stateDiskFull == true {
            lines.append("disk full: the disk holding the state directory is full; writes into files fail (ENOSPC)")
        }
        for failing in status.failing {
            lines.append(
                "failing: \(failing.path ?? failing.fileID): \(failing.reason) "
                    + "(\(HumanUnits.count(failing.attempts, "attempt")))")
        }
        if let error = status.lastContainerError { lines.append("last error: \(error)") }
        for refused in status.refusedRemoteEntries {
            lines.append("refused remote entry \(refused.fileID) (version \(refused.version)): \(refused.reason)")
        }
        for rules in status.rulesErrors { lines.append("rules error: \(rules.path): \(rules.message)") }
        lines += IgnoreStatusLines.text(status.ignored)
        if let excluded = status.excluded, !excluded.isEmpty {
            lines.append("excluded: " + excluded.joined(separator: ", "))
        }
        return lines.map(TerminalText.safe).joined(separator: "\n") + "\n"
    }

    static func path(_ status: PathStatus, display: String) -> String {
        var line = "\(display): \(status.state.rawValue)"
        switch status.pinned {
        case .pinned: line += ", pinned"
        case .inherited: line += ", pinned (by a folder above)"
        case .none: break
        }
        line += ", \(HumanUnits.bytes(status.totalBytes ?? status.size)), \(HumanUnits.bytes(status.localBytes)) local"
        var lines = [line]
        if let progress = status.progress {
            lines.append(progressText(done: progress.done, total: progress.total, bar: isatty(STDOUT_FILENO) != 0))
        }
        if let files = status.files {
            lines.append(
                "files below: \(files.local) local, \(files.online) online only, \(files.modified) modified, "
                    + "\(files.downloading) downloading, \(files.uploading) uploading, \(files.error) failing"
                    + (files.conflict > 0 ? ", \(files.conflict) in conflict" : ""))
        }
        if let error = status.error { lines.append("last error: \(error)") }
        for lock in status.locks ?? [] { lines.append(lockLine(lock)) }
        for lost in status.lostLocks ?? [] { lines.append("lock lost: \(lost)") }
        return lines.map(TerminalText.safe).joined(separator: "\n") + "\n"
    }

    /// "lock: posix exclusive 0-99 held by 'laptop' (this mount), lease until 2026-…Z".
    static func lockLine(_ lock: PathLock) -> String {
        let range = "\(lock.start)-\(lock.end.map(String.init) ?? "EOF")"
        var line = "lock: \(lock.kind) \(lock.mode) \(range) held by '\(lock.holder)'"
        if lock.thisMount { line += " (this mount)" }
        if lock.localOnly {
            line += ", local only"
        } else if let expires = lock.expires {
            line += ", lease until \(expires)"
        }
        return line
    }

    static func progressText(done: Int64, total: Int64, bar: Bool) -> String {
        let fraction = total > 0 ? min(max(Double(done) / Double(total), 0), 1) : 1
        let text = "\(Int(fraction * 100))% (\(HumanUnits.bytes(done)) of \(HumanUnits.bytes(total)))"
        guard bar else { return text }
        let filled = Int(fraction * 20)
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 20 - filled) + "] " + text
    }
}
