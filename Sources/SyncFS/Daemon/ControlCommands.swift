import SyncBackend

/// What the daemon does for each control request.
struct ControlCommands {
    let engine: SyncEngine
    /// The mount's locks (`status PATH` shows them); nil in tests without a lock service.
    var locks: MountLocks? = nil

    var fileSystem: SyncFileSystem { engine.fileSystem }
    var conflicts: Conflicts { engine.conflicts }

    func answer(_ request: ControlRequest) -> ControlReply {
        do throws(FSError) {
            switch request.command {
            case .status:
                var status = engine.status()
                status.addLocks(locks)
                if request.ignored == true { status.ignored = engine.ignoreStatus(listing: true) }
                return ControlReply(status: status)
            case .sync:
                engine.expedite()
                var status = engine.syncAnswer()
                status.addLocks(locks)
                return ControlReply(status: status)
            case .pathStatus:
                let ino = try target(request)
                var status = PathStatus(try fileSystem.residency.pathStatus(ino))
                status.addLocks(of: ino, fileSystem: fileSystem, locks: locks)
                return ControlReply(path: status)
            case .pin, .unpin:
                return try pin(try target(request), request.command == .pin)
            case .evict:
                return ControlReply(action: try evict(below: try target(request)))
            case .events:
                return ControlReply(error: "events is a stream (ControlServer answers it)")
            case .download:
                if engine.pause.holds(.all) {
                    return ControlReply(
                        error: "the mount is paused with all transfers: "
                            + "nothing is downloaded until `syncfs-mount resume`",
                        retryable: true)
                }
                let ids = try fileSystem.residency.placeholders(below: try target(request))
                engine.downloader.request(ids)
                var report = ActionReport()
                report.files = ids.count
                return ControlReply(action: report)
            case .conflicts:
                return ControlReply(conflicts: conflicts.unresolved())
            case .release, .discard:
                return guardAnswer(request.command)
            case .versions, .trash, .restore:
                return historyAnswer(request)
            case .pause, .resume:
                return pauseAnswer(request)
            case .verify:
                if engine.pause.current != nil {
                    return ControlReply(
                        error: "the mount is paused: nothing is checked until `syncfs-mount resume`", retryable: true)
                }
                guard let report = engine.verifyTree(timeout: .seconds(120)) else {
                    return ControlReply(
                        error: "no check was made within 120 s (the feed is still being read, or the container "
                            + "does not answer); run verify again", retryable: true)
                }
                return ControlReply(treeCheck: report)
            case .exclude, .include:
                return selectiveSyncAnswer(request)
            case .limit:
                return limitAnswer(request)
            case .resolve:
                var report = ActionReport()
                report.files = try conflicts.resolve(try target(request))
                return ControlReply(action: report)
            }
        } catch {
            return ControlReply(
                error: error == .notFound ? "no such file or directory" : "\(error) (errno \(error.errno))")
        }
    }

    /// `pin` / `unpin`: a file pinned through a folder above it is refused, naming the folder.
    private func pin(_ ino: InodeNumber, _ pinned: Bool) throws(FSError) -> ControlReply {
        do throws(FSError) {
            try fileSystem.residency.setPinned(ino, pinned)
        } catch .notPermitted {
            let folder = fileSystem.residency.pinningAncestor(of: ino).map { $0.isEmpty ? "the mount's root" : $0 }
            return ControlReply(error: "it is pinned through the folder \(folder ?? "above it"); unpin that folder")
        }
        return ControlReply(action: ActionReport())
    }

    /// `evict`: what was freed below `ino`, and what was kept and why.
    private func evict(below ino: InodeNumber) throws(FSError) -> ActionReport {
        var report = ActionReport()
        for (path, outcome) in try fileSystem.residency.eviction.evict(below: ino) {
            switch outcome {
            case .evicted(let bytes):
                report.files += 1
                report.bytes += bytes
            case .alreadyOnline: break
            case .refused(let reason): report.refused.append(.init(path: path, reason: reason))
            }
        }
        return report
    }

    /// `exclude` / `include`: the folder's path and, for `exclude`, the content freed.
    private func selectiveSyncAnswer(_ request: ControlRequest) -> ControlReply {
        let selective = fileSystem.selectiveSync
        do throws(SelectiveSync.Refusal) {
            var report = ActionReport()
            if request.command == .exclude {
                let excluded = try selective.exclude(request.path ?? "")
                report.files = excluded.files
                report.bytes = excluded.bytes
            } else {
                _ = try selective.include(request.path ?? "")
            }
            return ControlReply(action: report)
        } catch {
            return ControlReply(error: error.message, retryable: error.retryable ? true : nil)
        }
    }

    private func target(_ request: ControlRequest) throws(FSError) -> InodeNumber {
        try fileSystem.lookup(path: request.path ?? "")
    }
}
