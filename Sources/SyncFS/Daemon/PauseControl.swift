import Foundation

/// The control socket's `pause` and `resume` (`SyncPause`; doc/SEMANTICS.md, "Pausing a mount").
extension ControlCommands {
    /// `pause`: the mount pauses (again: the new pause replaces the old one); `resume`: the pause
    /// ends (`action.files`: 1 if it was paused, 0 if not). Both answer the status after it, whose
    /// `paused` says what holds now; a `pauseSeconds` outside 1 s … 366 days is refused, nothing
    /// changed.
    func pauseAnswer(_ request: ControlRequest) -> ControlReply {
        if request.command == .resume {
            var report = ActionReport()
            report.files = engine.pause.resume() ? 1 : 0
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
        return ControlReply(status: engine.status())
    }
}
