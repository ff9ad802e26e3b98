import Foundation
import Glibc
import TestSupport
import Testing

/// Offline start (doc/SEMANTICS.md, "Offline" and "Errors"; doc/CLI.md, `mount`): a state
/// directory that was mounted before mounts even when its container directory is missing; what is
/// downloaded works, placeholders fail with `ENETDOWN` within about 3 s, writes are queued, and
/// when the container is back the queue drains and placeholders read again.
extension PlaceholderTests {
    @Suite struct Offline {
        @Test func aMountStartsWithoutItsContainerAndCatchesUpWhenItIsBack() throws {
            try SyncedMounts.with(uploadDelay: 20) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                let files: [String: [UInt8]] = [
                    "downloaded.bin": try randomBytes(300_000),
                    "placeholder.bin": try randomBytes(1 << 20),
                ]
                try writeFiles(files, under: a.root)
                try #require(a.expectSync())
                try #require(expectNamesArrive(files, under: b.root, "B attaching"))
                #expect(try readFile(b.path("downloaded.bin")) == files["downloaded.bin"]!)
                expectStates(
                    [b.path("downloaded.bin")], in: ["local"], "downloaded.bin, read", timeout: markedDownloadedWithin)
                #expect(describeState(b.path("placeholder.bin")) == "online")
                try b.unmount()

                // The container goes away; B starts from its stored metadata.
                let away = mounts.containerPath + ".away"
                try posix("rename container away") { rename(mounts.containerPath, away) }
                var containerAway = true
                defer { if containerAway { rename(away, mounts.containerPath) } }
                let logStart = Int((try? lstatPath(b.logPath).st_size) ?? 0)
                do {
                    try b.remount()
                } catch {
                    Issue.record("mounting B without its container failed: \(error)")
                    return
                }
                #expect(!pathExists(mounts.containerPath), "an offline mount must not create the container again")
                #expect(try readFile(b.path("downloaded.bin")) == files["downloaded.bin"]!)
                switch timedRead(b.path("placeholder.bin"), count: 4096, deadline: 10) {
                case .failed(let code, let seconds):
                    #expect(code == ENETDOWN, "reading the placeholder offline: \(placeholderErrnoName(code))")
                    #expect(seconds < 5, "ENETDOWN came after \(seconds) s")
                case .bytes(let read, _):
                    Issue.record("reading the placeholder offline returned \(read.count) bytes, expected ENETDOWN")
                case .blocked:
                    Issue.record("reading the placeholder offline was still blocked after 10 s")
                }
                let offlineLog = String(
                    decoding: (FileManager.default.contents(atPath: b.logPath) ?? Data()).dropFirst(logStart),
                    as: UTF8.self)
                #expect(
                    offlineLog.contains("placeholder.bin"), "the daemon logs a line naming the file:\n\(offlineLog)")
                let offline = try b.syncStatus()
                #expect(offline.online == false, "status says offline: \(String(describing: offline.online))")
                let written = bytes("written while the container was away\n")
                try writeFile(b.path("written-offline.txt"), written)
                #expect(try readFile(b.path("written-offline.txt")) == written)

                // The container is back: the queue drains and placeholders download again.
                try posix("rename container back") { rename(away, mounts.containerPath) }
                containerAway = false
                let reached = waitUntil(timeout: 20) { try readFile(a.path("written-offline.txt")) == written }
                #expect(reached, "the offline write did not reach A within 20 s\n\(mounts.logs(limit: 2000))")
                let readable = waitUntil(timeout: 20) {
                    sameBytes(try readFile(b.path("placeholder.bin")), files["placeholder.bin"]!)
                }
                #expect(readable, "the placeholder did not read back within 20 s of the container's return")
                #expect(try b.syncStatus().online == true)
            }
        }
    }
}
