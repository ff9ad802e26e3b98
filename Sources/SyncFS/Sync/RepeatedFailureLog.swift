import Synchronization

/// Decides which failures are worth a log line: the first of a kind, then at most one per
/// `interval` for that kind, saying how many were left out meanwhile. A server that refuses every
/// upload for an hour costs a line a minute, not a line per attempt (25 MB of log in 2.5 min
/// before), while `status` still shows each item's last error.
public final class RepeatedFailureLog: Sendable {
    public let interval: Int64
    private let state = Mutex<[String: (loggedAt: Int64, suppressed: Int)]>([:])

    /// `interval`: nanoseconds between two lines of the same kind.
    public init(interval: Int64 = 60_000_000_000) { self.interval = interval }

    /// Whether a failure of `kind` at `now` (ns) is logged; if so, how many of its kind were not
    /// logged since the last line (0 for the first).
    public func admit(_ kind: String, now: Int64) -> (logged: Bool, suppressed: Int) {
        state.withLock { kinds in
            if let last = kinds[kind], now - last.loggedAt < interval {
                kinds[kind] = (last.loggedAt, last.suppressed + 1)
                return (false, 0)
            }
            let suppressed = kinds[kind]?.suppressed ?? 0
            if kinds.count > 1024 { kinds.removeAll() }  // keys name entries for some kinds: stay small
            kinds[kind] = (now, 0)
            return (true, suppressed)
        }
    }
}
