import Foundation
import Glibc
import TestSupport
import Testing

/// Merge commands run off the upload path: a slow `merge=command:` delays only its
/// own file. Before, the uploader ran the command itself, and every other upload of the mount
/// waited for it (an unrelated file took 3.86 s instead of 0.1 s).
@Suite(.serialized)
struct MergeWorkerMountTest {
    /// A 0700 directory of the test's user (a trusted place for `--merge-commands`).
    private func privateDirectory() throws -> String {
        return try makeTemporaryDirectory("syncfs-mergew")
    }

    /// B merges `plan.txt` with a command that marks its start, sleeps 20 s and marks its end.
    /// While it sleeps, a new file written on B reaches A (through the container): the order of
    /// the markers and the file shows the upload did not wait, with no timing assertion. Then the
    /// merge ends and both mounts get its result.
    @Test func aSlowMergeCommandDelaysOnlyItsOwnFile() throws {
        let directory = try privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The command may run as another user (nobody, under root): its markers go where it can write.
        let markers = directory + "/markers"
        try makeDirectory(markers, mode: 0o777)
        chmod(markers, 0o1777)
        chmod(directory, 0o711)
        let allowList = directory + "/merge-commands"
        try writeFile(
            allowList,
            "slow  { touch \(markers)/started; sleep 20; cat %B >> %A; touch \(markers)/done; }\n", mode: 0o600)
        let outage = directory + "/outage"
        try SyncedMounts.with(
            uploadDelay: 20, argumentsB: ["--merge-commands", allowList], environmentB: OutageSwitch.environment(outage)
        ) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            try writeFile(a.path(".syncfs-rules"), "*.txt merge=command:slow\n")
            try writeFile(a.path("plan.txt"), "base\n")
            #expect(a.expectSync())
            #expect(waitUntil { try readText(b.path("plan.txt")) == "base\n" && pathExists(b.path(".syncfs-rules")) })
            // Both change plan.txt while B cannot reach the container; B merges when it comes back.
            try writeFile(outage, "")
            try writeFile(a.path("plan.txt"), "from A\n")
            #expect(a.expectSync())
            try writeFile(b.path("plan.txt"), "from B\n")
            usleep(300_000)  // scenario: B's edit is noticed while offline
            unlink(outage)
            #expect(
                waitUntil(timeout: 60) { pathExists(markers + "/started") }, "the command started\n\(mounts.logs())")
            try writeFile(b.path("other.txt"), "unrelated")
            let arrived = waitUntil(timeout: 60) { pathExists(a.path("other.txt")) }
            let doneBeforeArrival = pathExists(markers + "/done")
            #expect(arrived, "other.txt reached A\n\(mounts.logs())")
            #expect(!doneBeforeArrival, "other.txt waited for the merge command\n\(mounts.logs())")
            #expect(try b.syncStatus().pendingEntries >= 1, "plan.txt stays queued while its command runs")

            // The merge finishes and its result reaches both mounts.
            #expect(waitUntil(timeout: 90) { pathExists(markers + "/done") }, "\(mounts.logs())")
            let merged = "from B\nfrom A\n"
            #expect(
                waitUntil(timeout: 60) {
                    try readText(b.path("plan.txt")) == merged && readText(a.path("plan.txt")) == merged
                },
                "both mounts show the command's result: \((try? readText(b.path("plan.txt"))) ?? "?")\n\(mounts.logs())"
            )
            #expect(b.expectSync())
            #expect(try b.syncStatus().pendingEntries == 0)
        }
    }
}
