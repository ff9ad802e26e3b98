import SyncBackend

/// The control socket's `versions`, `trash` and `restore` (doc/CLI.md): requests checked here,
/// the work in `HistoryService`.
extension ControlCommands {
    func historyAnswer(_ request: ControlRequest) -> ControlReply {
        do throws(HistoryFailure) {
            switch request.command {
            case .versions:
                return ControlReply(history: try engine.history.versionsListing(path: request.path ?? ""))
            case .trash:
                return ControlReply(trash: try engine.history.trashListing())
            default:
                return ControlReply(restore: try engine.history.restore(try Self.restoreOrder(request)))
            }
        } catch {
            return ControlReply(error: error.description, retryable: error.isRetryable)
        }
    }

    private static func restoreOrder(_ request: ControlRequest) throws(HistoryFailure) -> RestoreOrder {
        let target: RestoreOrder.Target
        if let hex = request.fileID {
            guard request.path == nil || request.path == "", let id = FileID(hex: hex) else {
                throw HistoryFailure("a file ID is 32 hexadecimal digits, named instead of a path")
            }
            target = .fileID(id)
        } else {
            target = .path(request.path ?? "")
        }
        if let version = request.version, version == 0 {
            throw HistoryFailure("version 0 is no version (see `syncfs-mount versions`)")
        }
        return RestoreOrder(target: target, version: request.version, destination: request.destination)
    }
}
