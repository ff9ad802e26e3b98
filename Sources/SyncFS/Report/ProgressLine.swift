/// The progress line of `sync`, `unmount`, `download` and `pin` (doc/CLI.md, "Progress"):
/// bytes done of the total with a percentage, the rate over the last seconds and the time left.
///
/// - **Terminal** (`.redraw`): the line is redrawn in place (`\r`, then erase to the end of the
///   line), at most every `redrawInterval` seconds, and only when the progress changed; `finish`
///   ends it with a newline.
/// - **Otherwise** (`.lines`, a pipe or a log file): one whole line at most every `lineInterval`
///   seconds (1 s), and only when the progress changed since the last line — an upload that is
///   stuck prints nothing more until it moves.
///
/// Time comes from `clock` (seconds, monotonic), so tests drive it with a fake clock; output
/// goes to `write`. Not thread-safe: one waiter owns it.
public final class ProgressLine {
    public enum Style: Sendable {
        case redraw
        case lines
    }

    /// What is being waited for, as the waiter sees it now.
    public struct Snapshot: Equatable, Sendable {
        /// `syncing`, `downloading`, …
        public var verb: String
        /// Items left (changes, files) and their noun in the singular.
        public var itemsLeft: Int
        public var noun: String
        public var done: Int64
        public var total: Int64
        /// Said after the numbers (`offline since 15:02:11, waiting`); nil when all is well.
        public var note: String?

        public init(verb: String, itemsLeft: Int, noun: String, done: Int64, total: Int64, note: String? = nil) {
            self.verb = verb
            self.itemsLeft = itemsLeft
            self.noun = noun
            self.done = done
            self.total = total
            self.note = note
        }
    }

    public let style: Style
    var lineInterval: Double = 1
    var redrawInterval: Double = 0.1
    /// Rate window: the rate is measured over the samples of the last this many seconds.
    var rateWindow: Double = 10
    private let clock: () -> Double
    private let write: (String) -> Void
    private var samples: [(time: Double, done: Int64)] = []
    private var lastShown: Snapshot?
    private var lastShownAt: Double?
    /// A redrawn line is on screen (the next output must end it first).
    private var lineOpen = false

    public init(style: Style, clock: @escaping () -> Double, write: @escaping (String) -> Void) {
        self.style = style
        self.clock = clock
        self.write = write
    }

    /// Bytes per second over the rate window, once it spans at least a second.
    public var rate: Double? {
        guard let first = samples.first, let last = samples.last, last.time - first.time >= 1 else { return nil }
        return Double(last.done - first.done) / (last.time - first.time)
    }

    /// Records `snapshot` and shows it if the style allows one now.
    public func update(_ snapshot: Snapshot) {
        let now = clock()
        if let last = samples.last, snapshot.done < last.done { samples = [] }
        samples.append((now, snapshot.done))
        while samples.count > 2, now - samples[0].time > rateWindow { samples.removeFirst() }
        guard snapshot != lastShown else { return }
        if let at = lastShownAt, now - at < (style == .redraw ? redrawInterval : lineInterval) { return }
        show(snapshot, now: now)
    }

    /// Ends the progress: the redrawn line is cleared and `final` (if any) printed as a line.
    public func finish(_ final: String?) {
        var output = lineOpen ? "\r\u{1B}[K" : ""
        lineOpen = false
        if let final { output += final + "\n" }
        if !output.isEmpty { write(output) }
    }

    /// The text of a snapshot: `syncing: 2 changes left, 45% (340.2 MiB of 762.9 MiB),
    /// 12.3 MiB/s, 35 s left`.
    public func text(_ snapshot: Snapshot) -> String {
        var parts = ["\(HumanUnits.count(snapshot.itemsLeft, snapshot.noun)) left"]
        if snapshot.total > 0 {
            let done = min(max(snapshot.done, 0), snapshot.total)
            let percent = Int(Double(done) * 100 / Double(snapshot.total))
            parts.append("\(percent)% (\(HumanUnits.bytes(done)) of \(HumanUnits.bytes(snapshot.total)))")
            if let rate, rate > 0 {
                parts.append(HumanUnits.rate(rate))
                parts.append(HumanUnits.duration(Double(snapshot.total - done) / rate) + " left")
            }
        }
        if let note = snapshot.note { parts.append(note) }
        return snapshot.verb + ": " + parts.joined(separator: ", ")
    }

    private func show(_ snapshot: Snapshot, now: Double) {
        lastShown = snapshot
        lastShownAt = now
        switch style {
        case .redraw:
            write("\r\u{1B}[K" + text(snapshot))
            lineOpen = true
        case .lines:
            write(text(snapshot) + "\n")
        }
    }
}

/// Done and total bytes of a queue that drains while work may be added: `observe(left:)` with the
/// bytes still to go; the total grows when more is added, `done` never goes back.
public struct DrainTotals: Equatable, Sendable {
    public private(set) var done: Int64 = 0
    public private(set) var total: Int64 = 0

    public init() {}

    public mutating func observe(left: Int64) {
        let left = max(left, 0)
        if left > total - done {
            total = done + left
        } else {
            done = total - left
        }
    }
}
