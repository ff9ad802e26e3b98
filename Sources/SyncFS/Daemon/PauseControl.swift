import Foundation

/// The control socket's `pause` and `resume` (`SyncPause`; doc/SEMANTICS.md, "Pausing a mount").
extension ControlCommands {
    /// `pause`: the mount pauses (again: the new pause replaces the old one); `resume`: the pause
    /// ends (`action.files`: 1 if it was paused, 0 if not). Both answer the status after it, whose
    /// `paused` says what holds now; a `pauseSeconds` outside 1 s … 366 days is refused, nothing
    /// changed. Either answers only once the `paused` fact is committed and durable: a pause
    /// the user was told of survives a crash right after.
    func pauseAnswer(_ request: ControlRequest) -> ControlReply {
        if request.command == .resume {
            var report = ActionReport()
            report.files = engine.pause.resume() ? 1 : 0
            if let error = commitPause() { return ControlReply(error: error, retryable: true) }
            return ControlReply(status: engine.status(), action: report)
        }
        var until: Date?
        if let seconds = request.pauseSeconds {
            guard seconds >= 1 && seconds <= DurationText.longest else {
                return ControlReply(error: "a pause lasts between 1 second and 366 days, not \(seconds) s")
            }
            until = Date().addingTimeInterval(Double(seconds))
        }
        engine.pause.pause(PauseState(until: until, scope: request.pauseAll == true ? .all : .sync))
        if let error = commitPause() { return ControlReply(error: error, retryable: true) }
        return ControlReply(status: engine.status())
    }

    /// Commits the recorded pause durably; the error to answer if the state database refused.
    private func commitPause() -> String? {
        do {
            try fileSystem.store.commit(durable: true)
            return nil
        } catch {
            return "cannot record the pause in the state database: \(error)"
        }
    }
}
