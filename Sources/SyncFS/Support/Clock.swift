import Glibc

/// Wall-clock time in nanoseconds since the Unix epoch.
enum Clock {
    @Sendable static func nowNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
