import Foundation
import Glibc
import Testing

/// A download cut by `kill -9` of the daemon (doc/SEMANTICS.md, "Placeholders": a file is marked
/// downloaded only after all its bytes are on disk and synced; an interrupted download leaves a
/// placeholder and the next read resumes it).
extension PlaceholderTests {
    @Suite struct KilledDownload {
        static let size = 200 << 20

        @Test func killDuringADownloadLeavesAPlaceholderOrTheWholeFile() throws {
            try SyncedMounts.with(uploadDelay: 20) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                let content = try randomBytes(Self.size)
                try writeFile(a.path("huge.bin"), content)
                try #require(a.expectSync(timeout: 120))
                try #require(expectNamesArrive(["huge.bin": content], under: b.root, timeout: 30, "B attaching"))
                let path = b.path("huge.bin")
                #expect(describeState(path) == "online")

                // The first 4 KiB start the download of the whole file; kill B's daemon at once.
                let fd = try openFile(path, O_RDONLY)
                let first = try preadBytes(fd, count: 4096, offset: 0)
                let progress = try? syncfsXattr(path, "progress")
                try b.kill9()
                close(fd)
                #expect(first == Array(content[0..<4096]), "the first 4 KiB")
                // The kill must come in the middle of the download: DONE/TOTAL with DONE < TOTAL.
                let parts = progress?.split(separator: "/").compactMap { Int64($0) } ?? []
                #expect(
                    parts.count == 2 && parts[0] < parts[1] && parts[1] == Int64(Self.size),
                    "user.syncfs.progress at the kill: \(progress ?? "none")")
                print("kill -9 of B during the download of huge.bin at \(progress ?? "unknown progress")")

                try b.remount()
                let state = describeState(path)
                #expect(["online", "local"].contains(state), "huge.bin after the kill and remount: \(state)")
                let status = try b.pathStatus(path)
                #expect(status.size == Int64(Self.size), "\(status)")
                if state == "local" {
                    #expect(status.localBytes == Int64(Self.size), "a file marked local has all its bytes: \(status)")
                }
                let read = try readFile(path)
                #expect(
                    sameBytes(read, content),
                    "huge.bin read after the remount differs from byte \(firstDifference(read, content) ?? -1)")
                expectStates([path], in: ["local"], "huge.bin, read whole", timeout: markedDownloadedWithin)
            }
        }
    }
}
