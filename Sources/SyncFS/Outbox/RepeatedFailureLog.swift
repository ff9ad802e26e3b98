import Synchronization

/// Decides which failures are worth a log line, so a failure that repeats costs a bounded number
/// of lines however often it is retried (doc/SEMANTICS.md, "Logs"):
///
/// - the **first** failure of a kind is logged (`admit` says `logged`, `suppressed` 0);
/// - while it goes on, at most one line per `interval` for that kind, saying how many were left
///   out meanwhile (a **summary**);
/// - when the caller sees the thing work again it calls `end`: if failures of that kind were
///   seen, it gets how many and for how long, for **one closing line**.
///
/// An offline mount with a queue thus logs one line when the outage starts, one every
/// `interval` while it lasts and one when it ends, whatever the retry rate and queue length
/// (161 lines in 2 minutes before), while `status` still shows each item's last error.
final class RepeatedFailureLog: Sendable {
    let interval: Int64
    private struct Episode {
        var startedAt: Int64
        var loggedAt: Int64
        var suppressed: Int
        var failures: Int
        var lastFailureAt: Int64
    }
    private let state = Mutex<[String: Episode]>([:])

    /// `interval`: nanoseconds between two lines of the same kind (default `summaryInterval`).
    init(interval: Int64 = RepeatedFailureLog.summaryInterval.inNanoseconds) { self.interval = interval }

    /// 5 minutes between two lines about the same lasting failure: an outage of a day logs ~300
    /// lines, not one per attempt, and `status` shows the latest error meanwhile.
    @usableFromInline static let summaryInterval: Duration = .seconds(300)

    /// Whether a failure of `kind` at `now` (ns) is logged; if so, how many of its kind were not
    /// logged since the last line (0 for the first).
    func admit(_ kind: String, now: Int64) -> (logged: Bool, suppressed: Int) {
        state.withLock { kinds in
            if var episode = kinds[kind] {
                episode.failures += 1
                episode.lastFailureAt = now
                if now - episode.loggedAt < interval {
                    episode.suppressed += 1
                    kinds[kind] = episode
                    return (false, 0)
                }
                let suppressed = episode.suppressed
                episode.loggedAt = now
                episode.suppressed = 0
                kinds[kind] = episode
                return (true, suppressed)
            }
            if kinds.count > 1024 { kinds.removeAll() }  // keys name entries for some kinds: stay small
            kinds[kind] = Episode(startedAt: now, loggedAt: now, suppressed: 0, failures: 1, lastFailureAt: now)
            return (true, 0)
        }
    }

    /// Ends the failures of every kind `matching` (the thing works again): for each kind that
    /// had failures, the kind, how many failures and how long since the first (ns), for one line.
    /// With `failedBefore`, only kinds whose last failure came before it end (the proof that
    /// things work came after the last failure, not before it).
    func end(now: Int64, failedBefore: Int64 = .max, matching: (String) -> Bool) -> [(
        kind: String, failures: Int, lasted: Int64
    )] {
        state.withLock { kinds in
            let ended = kinds.filter { matching($0.key) && $0.value.lastFailureAt < failedBefore }
            for kind in ended.keys { kinds[kind] = nil }
            return ended.map { ($0.key, $0.value.failures, now - $0.value.startedAt) }.sorted { $0.kind < $1.kind }
        }
    }

    /// Whether failures of a kind `matching` are going on (cheap check before `end`).
    func isFailing(matching: (String) -> Bool) -> Bool {
        state.withLock { kinds in kinds.keys.contains(where: matching) }
    }

    /// `nanoseconds` for a log line: `45 s`, `3 min 5 s`, `2 h 10 min`.
    static func duration(_ nanoseconds: Int64) -> String {
        let seconds = max(0, nanoseconds / 1_000_000_000)
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds / 3600) h \(seconds % 3600 / 60) min"
    }
}
