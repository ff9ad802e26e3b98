import Foundation
import Glibc

/// The built `syncfs-mount` the tests run: `$SYNCFS_MOUNT_BINARY`, else
/// `<package>/.build/debug/syncfs-mount`.
public enum SyncfsBinary {
    /// Its path; throws if nothing executable is there (build it, or set the variable).
    public static func path() throws(TestSupportError) -> String {
        let path: String
        if let configured = ProcessInfo.processInfo.environment["SYNCFS_MOUNT_BINARY"], !configured.isEmpty {
            path = configured
        } else {
            // #filePath is <package>/Tests/TestSupport/SyncfsBinary.swift.
            var root = URL(fileURLWithPath: #filePath)
            for _ in 0..<3 { root.deleteLastPathComponent() }
            path = root.path + "/.build/debug/syncfs-mount"
        }
        guard access(path, X_OK) == 0 else {
            throw TestSupportError(
                "the syncfs-mount binary is missing or not executable at \(path) "
                    + "(build it with `swift build`, or set SYNCFS_MOUNT_BINARY)")
        }
        return path
    }

    /// The benchmarks' command, `syncfs-bench`, built beside `syncfs-mount` (the same directory
    /// as `path()`); throws if nothing executable is there.
    public static func benchPath() throws(TestSupportError) -> String {
        let mount = try path()
        let path = URL(fileURLWithPath: mount).deletingLastPathComponent().path + "/syncfs-bench"
        guard access(path, X_OK) == 0 else {
            throw TestSupportError(
                "the syncfs-bench binary is missing or not executable at \(path), beside \(mount) "
                    + "(build it with `swift build`)")
        }
        return path
    }
}
