/// A mount's outage switch for tests: while the file exists, every call the daemon makes to its
/// container fails at once as unreachable, and goes through again once it is removed. The daemon
/// reads the file's path from its environment, `SYNCFS_TEST_OUTAGE_FILE` (doc/CLI.md, "Test
/// hooks"), which only tests set: no option or `-o` key of the shipped command line does this.
enum OutageSwitch {
    static let variable = "SYNCFS_TEST_OUTAGE_FILE"

    /// The environment that gives a daemon the switch at `path` (an absolute path).
    static func environment(_ path: String) -> [String: String] { [variable: path] }
}
