import Foundation
import SyncBackend

/// Switches for the mount tests, read from the daemon's environment, never from options: no
/// command line, `-o` key or fstab line reaches them (doc/CLI.md, "Test hooks").
enum TestHooks {
    /// `SYNCFS_TEST_OUTAGE_FILE=PATH` (an absolute path): the mount's container is unreachable
    /// while PATH exists (`OutageFileContainer`).
    static let outageFileVariable = "SYNCFS_TEST_OUTAGE_FILE"

    /// The outage switch `environment` names, if any.
    static func outageFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard let path = environment[outageFileVariable], path.hasPrefix("/") else { return nil }
        return path
    }

    /// `SYNCFS_TEST_LOCK_LEASE=SECONDS`: the lease of this mount's locks (`LockLimits.leaseSeconds`;
    /// 30 s otherwise), so that a test sees a crashed holder's lease run out soon.
    static let lockLeaseVariable = "SYNCFS_TEST_LOCK_LEASE"

    static func lockLease(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int? {
        guard let text = environment[lockLeaseVariable], let seconds = Int(text),
            LockLimits.leaseSeconds.contains(seconds)
        else { return nil }
        return seconds
    }
}
