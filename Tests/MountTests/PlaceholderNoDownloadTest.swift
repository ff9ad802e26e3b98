import Foundation
import Glibc
import Testing

/// `mount --no-download-for NAMES`: listed programs (thumbnailers, indexers) never start a
/// download; they get EACCES for content not downloaded, while other programs read normally and
/// what is downloaded stays readable to everyone.
extension PlaceholderTests {
    @Suite struct NoDownloadProcesses {
        @Test func listedProgramsNeverStartADownload() throws {
            try SyncedMounts.with(uploadDelay: 20, argumentsB: ["--no-download-for", "cat,head"]) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                let files: [String: [UInt8]] = [
                    "photo.jpg": patternBytes(count: 300_000, seed: 3), "notes.txt": bytes("notes\n"),
                ]
                try writeFiles(files, under: a.root)
                try #require(a.expectSync())
                try #require(expectNamesArrive(files, under: b.root, "B attaching"))

                let refused = ModelProcess.run(["/bin/cat", b.path("photo.jpg")], timeout: 30)
                #expect(refused.status != 0, "cat must not download: \(refused)")
                #expect(refused.stderr.contains("Permission denied"), "\(refused)")
                #expect(describeState(b.path("photo.jpg")) == "online")
                #expect(try b.bytesDownloaded() == 0)

                // Any other program downloads; then the listed ones read what is local.
                #expect(try readFile(b.path("photo.jpg")) == files["photo.jpg"]!)
                let allowed = ModelProcess.run(
                    ["/bin/sh", "-c", "/bin/cat \"$0\" | /usr/bin/wc -c", b.path("photo.jpg")], timeout: 30)
                #expect(allowed.ok, "\(allowed)")
                #expect(allowed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "300000", "\(allowed)")
            }
        }
    }
}
