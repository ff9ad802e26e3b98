import Glibc

/// The process's limit of open descriptors (`RLIMIT_NOFILE`). Each connection takes one, so a
/// soft limit left at a distribution's 1024 (or a container's 256) lets a few hundred idle
/// connections lock everyone out; the server raises it to the hard limit when it starts.
public enum DescriptorLimit {
    /// Raises the soft limit to the hard limit. Returns the limits before and after, or nil if
    /// they cannot be read or changed (the server then runs with the limit it has).
    @discardableResult
    public static func raiseToHardLimit() -> (before: UInt64, after: UInt64)? {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return nil }
        let before = UInt64(limit.rlim_cur)
        guard limit.rlim_cur < limit.rlim_max else { return (before, before) }
        limit.rlim_cur = limit.rlim_max
        guard setrlimit(resource, &limit) == 0 else { return nil }
        return (before, UInt64(limit.rlim_max))
    }

    /// The soft limit now (nil if it cannot be read).
    public static var current: UInt64? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return UInt64(limit.rlim_cur)
    }
}
