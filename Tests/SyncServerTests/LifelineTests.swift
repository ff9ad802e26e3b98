import Foundation
import Glibc
import TestSupport
import Testing

/// `serve --lifeline` and standard input (doc/CLI.md, "serve"): with standard input already at
/// end-of-file (`/dev/null`, systemd's default) `--lifeline` is a usage error at once — it hung
/// before listening before; without `--lifeline` standard input is never read.
@Suite struct LifelineTests {
    @Test func lifelineWithStandardInputAtEndOfFileExitsAtOnceWithAMessage() throws {
        let root = try TemporaryDirectory("syncfs-lifeline")
        defer { root.remove() }
        let process = Process()
        try Binary.configure(
            process, ["serve", "--root", root.path, "--listen", "127.0.0.1:0", "--lifeline"], umask: nil)
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        _ = waitUntil(timeout: 30) { !process.isRunning }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            Issue.record("serve --lifeline with standard input at end-of-file still ran after 30 s")
            return
        }
        let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 64, "\(stderr)")
        #expect(stderr.contains("--lifeline: standard input is already at end-of-file"), "\(stderr)")
        #expect(!stdout.contains("listening on"), "\(stdout)")
    }

    @Test func withoutLifelineStandardInputAtEndOfFileIsIgnored() throws {
        let root = try TemporaryDirectory("syncfs-lifeline")
        defer { root.remove() }
        let server = try ServeProcess.start(root: root.path)  // standard input: /dev/null
        usleep(500_000)  // scenario: time in which a stop at end-of-file would happen
        #expect(server.isRunning, "serve without --lifeline stopped at end-of-file on standard input")
        #expect(server.stop() == 0)
    }
}
