/// How often and how long to retry a transient failure: exponential backoff with full jitter
/// (each wait drawn uniformly from zero to `base · 2^attempt`, capped at `maxDelay`), as AWS
/// recommends so that many clients failing together do not retry together.
public struct S3RetryPolicy: Sendable {
    /// Attempts in all, the first included; 1 means no retry.
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration

    public init(maxAttempts: Int = 5, baseDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(5)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// No retry: for tests and for callers that retry themselves.
    public static let none = S3RetryPolicy(maxAttempts: 1)

    /// The ceiling of the wait after failed attempt `attempt` (0 for the first): base · 2^attempt,
    /// at most `maxDelay`.
    public func ceiling(afterAttempt attempt: Int) -> Duration {
        let factor = 1 << min(max(attempt, 0), 30)
        let grown = baseDelay * factor
        return grown < maxDelay ? grown : maxDelay
    }

    /// The wait after failed attempt `attempt`: `unit` (a random number in 0..<1) times the ceiling.
    public func delay(afterAttempt attempt: Int, unit: Double) -> Duration {
        ceiling(afterAttempt: attempt) * min(max(unit, 0), 1)
    }

    /// Whether a failure of attempt `attempt` (0 for the first) is retried: only transient ones,
    /// and only while attempts remain.
    public func shouldRetry(_ error: S3Error, afterAttempt attempt: Int) -> Bool {
        error.isTransient && attempt + 1 < maxAttempts
    }
}
