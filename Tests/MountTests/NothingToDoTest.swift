import Foundation
import Glibc
import Testing

/// `conflicts`, `sync` and `unmount` say in one line on standard output that there was nothing
/// to do (doc/CLI.md), where they printed nothing; `conflicts --json` stays `[]`, and a sync
/// that has work prints no such line.
@Suite(.serialized)
struct NothingToDoTest {
    @Test func eachCommandSaysInOneLineThatThereWasNothingToDo() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let container = sandbox.base + "/c"
        let mnt = sandbox.base + "/mnt"
        #expect(try sandbox.run(["init", container]).ok)
        let mounted = try sandbox.mount(container, at: mnt, ["--upload-delay", "600000"])
        try #require(mounted.ok, "\(mounted)")

        let conflicts = try sandbox.run(["conflicts", mnt])
        #expect(conflicts.ok && conflicts.stdout == "No unresolved conflicts.\n", "\(conflicts)")
        let json = try sandbox.run(["conflicts", mnt, "--json"])
        #expect(json.ok && json.stdout == "[]\n", "\(json)")
        let nothing = try sandbox.run(["sync", mnt])
        #expect(nothing.ok && nothing.stdout == "Nothing to sync: the container has every change.\n", "\(nothing)")

        // Queued (the upload delay is ten minutes): sync has work, and says nothing of the kind.
        try writeFile(mnt + "/a.txt", "queued\n")
        let work = try sandbox.run(["sync", mnt])
        #expect(work.ok && !work.stdout.contains("Nothing"), "\(work)")

        let unmounted = try sandbox.unmount(mnt)
        #expect(
            unmounted.ok && unmounted.stdout == "Unmounted \(mnt); nothing was waiting to upload.\n", "\(unmounted)")
        #expect(!TestFolder.isMounted(mnt))
    }
}
