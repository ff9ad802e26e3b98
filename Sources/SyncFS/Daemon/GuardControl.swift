/// The control socket's `release` and `discard` (the mass-delete guard, `DeleteGuard`).
extension ControlCommands {
    /// `release`: the held changes go (`action.files`: how many changes were queued then).
    /// `discard`: the held deletions and replacements are undone here (`action.files`: how many
    /// were). Only `status` (no `action`) if the guard holds nothing; an error if some could not
    /// be undone (it stays held).
    func guardAnswer(_ command: ControlRequest.Command) -> ControlReply {
        let notHeld = ControlReply(status: engine.status())
        if command == .release {
            let queued = fileSystem.outbox.count
            guard engine.guarded.release() else { return notHeld }
            var report = ActionReport()
            report.files = queued
            return ControlReply(action: report)
        }
        do throws(SyncFailure) {
            switch try engine.guarded.discard() {
            case .notHeld:
                return notHeld
            case .discarded(let restored, 0):
                var report = ActionReport()
                report.files = restored
                return ControlReply(action: report)
            case .sentStillLanding(let count):
                return ControlReply(
                    error: "\(count) changes sent before the guard tripped are still being committed; nothing was "
                        + "undone and the guard still holds; run discard again")
            case .discarded(let restored, let kept):
                return ControlReply(
                    error: "\(restored) held changes were undone, \(kept) could not be (in use, or the container "
                        + "did not answer); the guard still holds; run discard again")
            }
        } catch {
            return ControlReply(
                error: "cannot fetch the held entries from the container (\(error)); nothing more was undone and "
                    + "the guard still holds; run discard again")
        }
    }
}
