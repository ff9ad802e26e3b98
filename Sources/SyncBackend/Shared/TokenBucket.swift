/// A token bucket that may go into debt: the arithmetic of a bandwidth limit, without a clock.
///
/// Tokens are bytes. They refill at `rate` bytes per second up to `burst` (one second's worth,
/// at least `minimumBurst`). `take` always succeeds, even past zero: a chunk larger than the
/// burst still goes, and the debt it leaves is what the caller then waits out (`delay`). The
/// caller passes the time (`now`, a `Duration` since any fixed origin of its clock), so the
/// whole contract is tested without sleeping. A `rate` of nil is no limit: nothing is counted
/// and `delay` is always zero.
package struct TokenBucket: Sendable, Equatable {
    /// Bytes per second; nil: no limit.
    package private(set) var rate: Int64?
    /// The most tokens the bucket holds (what may go at once after a quiet spell).
    package private(set) var burst: Int64
    /// Tokens now (negative: debt), as of `updated`.
    private var tokens: Double
    private var updated: Duration

    /// The smallest burst, so a tiny rate still lets a request's worth go at once.
    package static let minimumBurst: Int64 = 16 * 1024

    /// A full bucket at `now`.
    package init(rate: Int64?, now: Duration) {
        self.rate = rate
        burst = Self.burst(for: rate)
        tokens = Double(burst)
        updated = now
    }

    private static func burst(for rate: Int64?) -> Int64 { max(rate ?? 0, minimumBurst) }

    /// Counts `bytes` as sent at `now` (may leave a debt).
    package mutating func take(_ bytes: Int64, now: Duration) {
        refill(now)
        guard rate != nil else { return }
        tokens -= Double(max(0, bytes))
    }

    /// How long from `now` until the debt is paid (zero without one, or without a limit).
    package func delay(now: Duration) -> Duration {
        guard let rate else { return .zero }
        var copy = self
        copy.refill(now)
        guard copy.tokens < 0 else { return .zero }
        let seconds = -copy.tokens / Double(rate)
        return .nanoseconds(Int64(min(seconds, 86_400 * 365) * 1e9) + 1)
    }

    /// Whether `bytes` may go at `now` with at most one chunk's debt: the bucket holds them, or
    /// (a chunk larger than the burst) it is full. Always true without a limit.
    package func admits(_ bytes: Int64, now: Duration) -> Bool { delay(admitting: bytes, now: now) == .zero }

    /// How long from `now` until `admits(bytes)` (zero without a limit).
    package func delay(admitting bytes: Int64, now: Duration) -> Duration {
        guard let rate else { return .zero }
        var copy = self
        copy.refill(now)
        let missing = Double(min(max(0, bytes), burst)) - copy.tokens
        guard missing > 0 else { return .zero }
        return .nanoseconds(Int64(min(missing / Double(rate), 86_400 * 365) * 1e9) + 1)
    }

    /// Changes the rate from `now`: what refilled until then counts at the old rate; a debt is
    /// kept (paid at the new rate); no limit forgives it, and a limit after none starts full.
    package mutating func setRate(_ newRate: Int64?, now: Duration) {
        refill(now)
        let wasUnlimited = rate == nil
        rate = newRate
        burst = Self.burst(for: newRate)
        if newRate == nil || wasUnlimited {
            tokens = Double(burst)
        } else {
            tokens = min(tokens, Double(burst))
        }
    }

    private mutating func refill(_ now: Duration) {
        defer { updated = max(updated, now) }
        guard let rate, now > updated else { return }
        tokens = min(Double(burst), tokens + (now - updated).inSeconds * Double(rate))
    }
}
