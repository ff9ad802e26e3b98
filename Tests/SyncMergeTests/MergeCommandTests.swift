import Foundation
import TestSupport
import Testing

@testable import SyncMerge

@Suite("MergeCommand")
struct MergeCommandTests {
    /// A fresh directory, removed after `body`.
    func withDirectory(_ body: (String) throws -> Void) throws {
        let directory = try TemporaryDirectory("syncmerge")
        try body(directory.path)
    }

    func run(_ command: String, timeout: Int = 10, in directory: String = "/") -> (MergeCommandResult, Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        let result = MergeCommand.run(command, timeoutSeconds: timeout, workingDirectory: directory)
        return (result, clock.now - start)
    }

    @Test func exitZeroMerges() {
        let (result, _) = run("echo merged; exit 0")
        #expect(
            result
                == MergeCommandResult(
                    merged: true, reason: nil, exitStatus: 0, output: bytes("merged\n"), errorOutput: []))
    }

    @Test func nonZeroExitDoesNotMerge() {
        let (result, _) = run("echo oops >&2; exit 3")
        #expect(!result.merged)
        #expect(result.exitStatus == 3)
        #expect(result.reason == "exited with status 3")
        #expect(result.errorOutput == bytes("oops\n"))
    }

    @Test func aSignalDoesNotMerge() {
        let (result, _) = run("kill -KILL $$")
        #expect(!result.merged)
        #expect(result.exitStatus == nil)
        #expect(result.reason == "killed by signal 9")
    }

    @Test func timeoutKillsTheCommand() {
        let (result, elapsed) = run("sleep 20", timeout: 1)
        #expect(!result.merged)
        #expect(result.reason == "timed out after 1 s")
        #expect(elapsed < .seconds(3))
    }

    @Test func aCommandIgnoringSIGTERMIsKilledASecondLater() {
        let (result, elapsed) = run("trap '' TERM; echo started; sleep 20; echo survived", timeout: 1)
        #expect(!result.merged)
        #expect(result.reason == "timed out after 1 s")
        #expect(result.output == bytes("started\n"))
        #expect(elapsed >= .milliseconds(1900) && elapsed < .seconds(3))
    }

    @Test func timeoutKillsTheWholeProcessGroup() throws {
        try withDirectory { directory in
            let (result, elapsed) = run("sleep 30 & echo $! > bg.pid; wait", timeout: 1, in: directory)
            #expect(result.reason == "timed out after 1 s")
            #expect(elapsed < .seconds(3))
            let pid = try String(contentsOfFile: directory + "/bg.pid", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            // Gone, or a zombie waiting for its new parent to reap it.
            let gone = waitUntil(timeout: 2) {
                let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
                return stat.isEmpty || stat.contains(") Z ")
            }
            #expect(gone, "background process \(pid) still running")
        }
    }

    @Test func runsInTheWorkingDirectoryWithNoInput() throws {
        try withDirectory { directory in
            let (result, _) = run("pwd -P; cat", in: directory)
            let real = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
            #expect(result.merged)
            #expect(result.output == bytes(real + "\n"))
        }
    }

    @Test func aMissingWorkingDirectoryFails() {
        let (result, _) = run("true", in: "/nonexistent/syncmerge")
        #expect(!result.merged)
        #expect(result.reason?.hasPrefix("could not start") == true || result.exitStatus == 126)
    }

    @Test func outputIsCappedButDrained() {
        let (result, _) = run("head -c 100000 /dev/zero; head -c 300000 /dev/zero >&2; echo done >&2")
        #expect(result.merged)
        #expect(result.output.count == MergeCommand.outputLimit)
        #expect(result.errorOutput.count == MergeCommand.outputLimit)
    }

    @Test func commandLineQuotesPlaceholders() {
        let line = MergeCommand.commandLine(
            "merge %O %A %B --path=%P 100%% %Q %", base: "a b", local: "it's", remote: "$r `x`", path: "d/\"p\"")
        #expect(line == #"merge 'a b' 'it'\''s' '$r `x`' --path='d/"p"' 100% %Q %"#)
    }

    @Test func placeholdersReachTheCommandUnchanged() throws {
        try withDirectory { directory in
            let base = directory + "/it's base.txt"
            let local = directory + "/local \"A\" $HOME.txt"
            let remote = directory + "/remote `x` \\ b.txt"
            try "base\n".write(toFile: base, atomically: false, encoding: .utf8)
            try "local\n".write(toFile: local, atomically: false, encoding: .utf8)
            try "remote\n".write(toFile: remote, atomically: false, encoding: .utf8)
            let path = "dir/it's a \"file\" $x.txt"
            let line = MergeCommand.commandLine(
                "cat %O %B > %A && printf '%%s|%%%%' %P >> %A", base: base, local: local, remote: remote, path: path)
            let (result, _) = run(line, in: directory)
            #expect(result.merged, "\(result.reason ?? "") \(String(decoding: result.errorOutput, as: UTF8.self))")
            #expect(try String(contentsOfFile: local, encoding: .utf8) == "base\nremote\n\(path)|%")
        }
    }
}
