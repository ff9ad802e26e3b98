import Glibc
import SyncFS

/// The progress of a first mount's attach on a terminal (doc/CLI.md, "The first mount"): the
/// daemon started in the background writes `attaching N` lines before `ready` (`FirstAttach`);
/// `mount` redraws one line on its standard error, at most ten times a second, and clears it
/// when the daemon is ready or failed. Not on a terminal, nothing is drawn (the daemon's log
/// has the progress).
final class AttachProgressDisplay {
    private var lastDrawn: Double = 0
    private var drawn = false

    /// A display on standard error if it is a terminal, else nil.
    static func onStandardError() -> AttachProgressDisplay? {
        isatty(STDERR_FILENO) == 1 ? AttachProgressDisplay() : nil
    }

    /// The entries of an `attaching N` line, or nil for any other line.
    static func entries(inLine line: String) -> Int? {
        guard line.hasPrefix(FirstAttach.progressPrefix) else { return nil }
        return Int(line.dropFirst(FirstAttach.progressPrefix.count)).flatMap { $0 >= 0 ? $0 : nil }
    }

    func show(entries: Int) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let seconds = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        guard !drawn || seconds - lastDrawn >= 0.1 else { return }
        lastDrawn = seconds
        drawn = true
        draw("\r\u{1B}[Kattaching the container's tree: " + HumanUnits.count(entries, "entry", "entries"))
    }

    /// Clears the line (the next output starts on a clean line).
    func finish() {
        if drawn { draw("\r\u{1B}[K") }
        drawn = false
    }

    private func draw(_ text: String) {
        _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
}
