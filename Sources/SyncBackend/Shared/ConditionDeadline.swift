import Foundation

/// Deadlines for waits on an `NSCondition` (`Worker`, `StopSignal`, and SyncFS's waits), which
/// count in wall-clock `Date`s.
package enum ConditionDeadline {
    /// `duration` from now.
    package static func after(_ duration: Duration) -> Date { Date().addingTimeInterval(duration.inSeconds) }

    /// `deadline`, or a day from now if later: `NSCondition.wait(until:)` traps on a date as far
    /// as `Date.distantFuture` (its nanoseconds overflow). Callers loop until the real deadline.
    package static func bounded(_ deadline: Date) -> Date { min(deadline, Date().addingTimeInterval(86_400)) }
}

extension Duration {
    /// This duration in seconds, for `Date` arithmetic and reports.
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
