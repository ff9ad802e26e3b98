import Foundation
import Glibc
import TestSupport
import Testing

/// Bandwidth limits on real mounts (doc/SEMANTICS.md, "Bandwidth limits"): the limits in force
/// in `status`, `limit` changing them while a transfer waits on them, kept across a remount,
/// `--reset`; files still arrive with limits on; and RATEs that are not rates refused.
@Suite(.serialized)
struct BandwidthLimitMountTest {
    struct LimitStatus: Decodable {
        struct Bandwidth: Decodable {
            var upload: Int64?
            var download: Int64?
            var uploadSource: String
            var downloadSource: String
            var scheduleEntry: String?
            var hasSchedule: Bool
        }

        struct Transfer: Decodable {
            var path: String
            var direction: String
            var done: Int64
            var total: Int64
        }

        var bandwidth: Bandwidth?
        var transfers: [Transfer]
    }

    private func cli(_ arguments: [String]) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.binaryPath()] + arguments, timeout: 60)
    }

    private func limits(_ folder: TestFolder) throws -> LimitStatus.Bandwidth? {
        (try folder.statusJSON(of: folder.root) as LimitStatus).bandwidth
    }

    /// A's uploads are limited to 64 KiB/s: a 4 MiB file (about a minute at that rate) shows as
    /// an upload in progress and does not reach B while the limit holds; `limit` raises it, and
    /// the file arrives through B's own download limit. The limit set by `limit` outlives a
    /// remount, and `--reset` brings back the mount's option.
    @Test(arguments: [false, true]) func limitChangesTheLimitWhileRunningAndFilesStillArrive(overServer: Bool) throws {
        try SyncedMounts.with(
            argumentsA: ["--upload-limit", "64K"], argumentsB: ["--download-limit", "1M"], overServer: overServer
        ) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let before = try #require(try limits(a))
            #expect(before.upload == 64 << 10 && before.uploadSource == "option" && before.download == nil)
            #expect(try limits(b)?.download == 1 << 20)
            let shown = try cli(["limit", a.root])
            #expect(shown.ok && shown.stdout.contains("upload 64 KiB/s, download no limit"), "\(shown)")
            let text = try cli(["status", a.root])
            #expect(text.stdout.contains("bandwidth: upload 64 KiB/s"), "\(text)")

            let content = try randomBytes(4 << 20)
            try writeFile(a.path("big.bin"), content)
            #expect(
                waitUntil {
                    let status: LimitStatus = try a.statusJSON(of: a.root)
                    return status.transfers.contains { $0.path == "big.bin" && $0.direction == "upload" }
                }, "the upload shows in status while it waits on the limit\n\(mounts.logs())")
            #expect(access(b.path("big.bin"), F_OK) != 0, "not committed while its chunks wait on the limit")

            let raised = try cli(["limit", a.root, "--upload", "64M"])
            #expect(raised.ok && raised.stdout.contains("upload 64 MiB/s (set by limit)"), "\(raised)")
            let after = try #require(try limits(a))
            #expect(after.upload == 64 << 20 && after.uploadSource == "limit")
            #expect(
                waitUntil(timeout: 30) { try readFile(b.path("big.bin")) == content },
                "arrives once the limit is raised, read through B's download limit\n\(mounts.logs())")

            try a.unmount()
            try a.remount()
            let remounted = try #require(try limits(a))
            #expect(remounted.upload == 64 << 20 && remounted.uploadSource == "limit", "kept across a remount")
            let reset = try cli(["limit", a.root, "--reset"])
            #expect(reset.ok && reset.stdout.contains("upload 64 KiB/s,"), "\(reset)")
            #expect(try limits(a)?.uploadSource == "option")
            try writeFile(a.path("small.txt"), "still goes")
            #expect(waitUntil { try readText(b.path("small.txt")) == "still goes" }, "\(mounts.logs())")
        }
    }

    /// A schedule's window in force shows in `status`; a window never in force leaves the option.
    @Test func theScheduleEntryInForceShowsInStatus() throws {
        let always = "00:00-24:00 up=128K"
        // A window 12 hours away from now, local time: not in force while the test runs.
        let hour = (Calendar.current.component(.hour, from: Date()) + 12) % 24
        let later = String(format: "%02d:00-%02d:00/down=1K", hour, (hour + 1) % 24)
        try SyncedMounts.with(
            argumentsA: ["--upload-limit", "1M", "--limit-schedule", always],
            argumentsB: ["--download-limit", "1M", "--limit-schedule", later]
        ) { mounts in
            let a = try #require(try limits(mounts.a))
            #expect(a.upload == 128 << 10 && a.uploadSource == "schedule" && a.scheduleEntry == always && a.hasSchedule)
            let text = try cli(["status", mounts.a.root])
            #expect(text.stdout.contains("schedule entry in force: \(always)"), "\(text)")
            let b = try #require(try limits(mounts.b))
            #expect(b.download == 1 << 20 && b.downloadSource == "option" && b.scheduleEntry == nil && b.hasSchedule)
            #expect(try cli(["status", mounts.b.root]).stdout.contains("outside every schedule window"))
            try writeFile(mounts.a.path("note.txt"), "scheduled")
            #expect(waitUntil { try readText(mounts.b.path("note.txt")) == "scheduled" }, "\(mounts.logs())")
        }
    }

    /// Hostile input: RATEs and schedules that are not ones are refused with exit 64 and a
    /// sentence, nothing is mounted and a running mount's limits do not change.
    @Test func ratesThatAreNotRatesAreRefused() throws {
        let directory = try makeTemporaryDirectory("syncfs-limits")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mountpoint = directory + "/mnt"
        try makeDirectory(mountpoint)
        for (option, value) in [
            ("--upload-limit", "99999999999999999999G"), ("--download-limit", "-5M"), ("--upload-limit", "fast"),
            ("--limit-schedule", "Mon-Fri 08:00-18:00"), ("--limit-schedule", "Someday 08:00-09:00 up=1M"),
        ] {
            let refused = try cli(["mount", directory + "/box", mountpoint, "--create", "\(option)=\(value)"])
            #expect(refused.status == 64, "\(option) \(value): \(refused)")
            #expect(refused.stderr.contains("\(option): "), "the reason, after the option: \(refused)")
            #expect(!TestFolder.isMounted(mountpoint))
        }
        try TestFolder.with(.mount) { folder in
            for value in ["99999999999999999999G", "-1", "1e400", "0x10M", String(repeating: "9", count: 5000)] {
                let refused = try cli(["limit", folder.root, "--upload=\(value)"])
                #expect(refused.status == 64 && refused.stderr.contains("is not a rate"), "\(refused)")
            }
            #expect(try limits(folder)?.upload == nil && limits(folder)?.uploadSource == "option")
        }
    }
}
