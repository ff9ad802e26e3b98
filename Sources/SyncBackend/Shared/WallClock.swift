import Glibc

/// The containers' clock for history (`HistoricVersion.committedAt`, retention): the system's
/// real-time clock in nanoseconds since the Unix epoch.
package enum WallClock {
    package static func nanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// `duration` in whole nanoseconds, saturating.
    package static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? Int64.min : Int64.max }
        return whole.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
            ? Int64.max : whole + attoseconds / 1_000_000_000
    }
}
