/// How one call waits while the server answers it "busy" (`503` or `429`): the server is
/// overloaded, or this token has as many requests in progress as it may; it is not unreachable.
///
/// Each call has its own backoff (another call's success does not shorten it): the first pause is
/// `first`, each next one twice as long up to `longest`, each drawn at random from its upper half
/// (jitter, so clients refused together do not come back together), and never shorter than the
/// server's `Retry-After` (delta seconds; capped at `longestRetryAfter`). A call that has been
/// refused for `patience` gives up with `ContainerProtocolError.busy`; its caller then backs off
/// on its own terms (the upload queue's per-item backoff). So a busy server sees at most about
/// `log2(patience / first) + 1` attempts per call and `patience` (7 attempts in 60 s), and never
/// a tight loop.
struct BusyBackoff: Sendable {
    static let first: Duration = .milliseconds(500)
    static let longest: Duration = .seconds(30)
    static let patience: Duration = .seconds(60)
    static let longestRetryAfter: Duration = .seconds(300)

    /// Busy answers so far.
    private(set) var refusals = 0

    /// The pause after one more busy answer, which said `Retry-After: retryAfter` (nil when it
    /// said nothing usable).
    mutating func nextPause(retryAfter: Duration?) -> Duration {
        refusals += 1
        var generator = SystemRandomNumberGenerator()
        return Self.pause(afterRefusals: refusals, retryAfter: retryAfter, using: &generator)
    }

    /// The pause after `refusals` busy answers in a row: exponential with jitter, at least
    /// `retryAfter`.
    static func pause(
        afterRefusals refusals: Int, retryAfter: Duration?, using generator: inout some RandomNumberGenerator
    ) -> Duration {
        let doublings = min(max(refusals - 1, 0), 16)
        let ceiling = min(first * (1 << doublings), longest)
        let milliseconds = Int64(ceiling / .milliseconds(1))
        let jittered = Duration.milliseconds(Int64.random(in: (milliseconds / 2)...milliseconds, using: &generator))
        guard let retryAfter else { return jittered }
        return max(jittered, min(retryAfter, longestRetryAfter))
    }

    /// A `Retry-After` header's delay: decimal seconds (an HTTP date is not used by this protocol's
    /// server and is ignored, as is anything else).
    static func retryAfter(_ header: String?) -> Duration? {
        guard let header, (1...6).contains(header.utf8.count), header.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let seconds = Int64(header)
        else { return nil }
        return .seconds(seconds)
    }
}
