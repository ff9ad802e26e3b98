import Foundation

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
}
