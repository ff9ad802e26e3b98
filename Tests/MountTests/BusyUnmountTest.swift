import Foundation
import Glibc
import TestSupport
import Testing

/// A busy `unmount` names the processes that use the mount, with their PIDs (doc/CLI.md,
/// `unmount`), and leaves it mounted.
@Suite(.serialized)
struct BusyUnmountTest {
    @Test func aBusyUnmountNamesTheProcessWorkingInTheFolder() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "20"])
        defer { folder.tearDown() }
        try makeDirectory(folder.path("work"))
        let devNull = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(devNull) }
        // A program whose working directory is in the folder, as a terminal left there.
        let sleeper = try TestFolder.spawn(
            ["/bin/sh", "-c", "cd \"$0\" && exec sleep 120", folder.path("work")],
            stdin: devNull, stdout: devNull, stderr: devNull)
        defer {
            kill(sleeper, SIGKILL)
            _ = TestFolder.waitForExit(sleeper, timeout: 10)
        }
        try #require(
            waitUntil {
                try readLink("/proc/\(sleeper)/cwd") == folder.path("work")
                    && readText("/proc/\(sleeper)/comm") == "sleep\n"
            })

        let result = ModelProcess.run([try TestFolder.binaryPath(), "unmount", folder.root], timeout: 90)
        #expect(result.status == 75, "\(result)")
        #expect(result.stderr.contains("sleep (PID \(sleeper): working directory)"), "\(result)")
        #expect(TestFolder.isMounted(folder.root), "a busy mount stays mounted")
    }
}
