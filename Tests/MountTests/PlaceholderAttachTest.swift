import Foundation
import Glibc
import TestSupport
import Testing

/// Attaching and hydration (doc/SEMANTICS.md, "Placeholders"): a mount that attaches to a
/// container stores names and attributes only; `ls -lR`, `stat`, `find` and `du` download nothing;
/// the first read downloads the whole file, shared by concurrent readers; `O_TRUNC`, `truncate`
/// to 0 and replacing by rename download nothing; opening for append downloads first.
extension PlaceholderTests {
    @Suite struct AttachAndHydration {
        @Test func attachingStoresNamesAndAttributesOnlyAndAReadDownloads() throws {
            try SyncedMounts.with(uploadDelay: 20) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                var files: [String: [UInt8]] = [:]
                for directory in 0..<5 {
                    for index in 0..<60 {
                        let number = directory * 60 + index
                        files["dir-\(directory)/file-\(index).txt"] = patternBytes(
                            count: 1 + (number * 977) % 20_000, seed: UInt64(number + 1))
                    }
                }
                let big = "dir-0/nested/big.bin"
                files[big] = try randomBytes(8 << 20)
                try writeFiles(files, under: a.root)
                try #require(a.expectSync())
                try #require(expectNamesArrive(files, under: b.root, "B attaching"))

                // Walks that only look: stat of everything, ls -lR, find, du.
                let shapeA = SyncedTree.snapshot(a.root, contents: false)
                let shapeB = SyncedTree.snapshot(b.root, contents: false)
                let differences = shapeA.differences(from: shapeB, labels: ("A", "B"))
                #expect(differences.isEmpty, "names, sizes, modes, mtimes: \(differences.prefix(20))")
                let listing = ModelProcess.run(["ls", "-lR", b.root])
                #expect(listing.ok && listing.stdout.contains("big.bin"), "\(listing)")
                let found = ModelProcess.run(["find", b.root, "-type", "f", "-size", "+0"])
                #expect(found.ok, "\(found)")
                #expect(found.stdout.split(separator: "\n").count == files.count, "find lists every file")
                let usage = ModelProcess.run(["du", "-s", "-k", b.root])
                let kibibytes = Int(usage.stdout.split(separator: "\t").first ?? "") ?? -1
                let total = files.values.map(\.count).reduce(0, +)
                #expect(
                    usage.ok && kibibytes >= 0 && kibibytes < total / 1024 / 4,
                    "du of placeholders shows almost nothing: \(kibibytes) KiB of \(total / 1024) KiB; \(usage)")

                #expect(try b.bytesDownloaded() == 0, "looking downloaded nothing")
                expectStates(files.keys.map { b.path($0) }, in: ["online"], "every file on B before any read")
                expectStates(
                    (0..<5).map { b.path("dir-\($0)") }, in: ["local"], "directories are local for themselves")
                let blocks = try lstatPath(b.path(big)).st_blocks
                #expect((1...8).contains(blocks), "st_blocks of the 8 MiB placeholder: \(blocks)")

                let bigStatus = try b.pathStatus(b.path(big))
                #expect(bigStatus.kind == "file" && bigStatus.state == "online", "\(bigStatus)")
                #expect(bigStatus.size == 8 << 20 && bigStatus.localBytes == 0, "\(bigStatus)")
                #expect(bigStatus.pinned == PinnedValue("0") && bigStatus.progress == nil, "\(bigStatus)")
                let folderStatus = try b.pathStatus(b.path("dir-1"))
                #expect(folderStatus.kind == "directory", "\(folderStatus)")
                #expect(folderStatus.files?["online"] == 60, "files below dir-1 by state: \(folderStatus)")
                let caughtUp = waitUntil(timeout: 10) { try b.syncStatus().feedCaughtUp == true }
                #expect(caughtUp, "feedCaughtUp once B shows everything A synced")
                let mountStatus = try b.syncStatus()
                #expect(
                    mountStatus.files?["online"] == files.count,
                    "files by state: \(String(describing: mountStatus.files))")

                // Reading downloads: A's bytes, and the files become local.
                expectContents(files, under: b.root, "B reading every file")
                expectStates(
                    files.keys.map { b.path($0) }, in: ["local"], "every file on B after reading it",
                    timeout: markedDownloadedWithin)
                #expect(try b.bytesDownloaded() > 0)
                let counted = waitUntil { try lstatPath(b.path(big)).st_blocks * 512 >= 8 << 20 }
                let blocksAfter = try lstatPath(b.path(big)).st_blocks
                #expect(counted, "st_blocks of the downloaded big file: \(blocksAfter)")
                let after = try b.pathStatus(b.path(big))
                #expect(after.state == "local" && after.localBytes == 8 << 20, "\(after)")
            }
        }

        @Test func concurrentReadersShareOneDownload() throws {
            try SyncedMounts.with(uploadDelay: 20) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                let size = 24 << 20
                let content = try randomBytes(size)
                try writeFile(a.path("shared.bin"), content)
                try #require(a.expectSync())
                try #require(expectNamesArrive(["shared.bin": content], under: b.root, "B attaching"))
                #expect(describeState(b.path("shared.bin")) == "online")
                let before = try b.bytesDownloaded()

                // Reader 0 starts in the middle; the others read from the start, all at once.
                let path = b.path("shared.bin")
                let results = LockedValue<[Int: Result<[UInt8], any Error>]>([:])
                let finished = runOnThreads(4, timeout: 90) { index in
                    let result = Result<[UInt8], any Error> {
                        try withFile(path, O_RDONLY) { fd in
                            if index == 0 {
                                let middle = try preadBytes(fd, count: 1 << 20, offset: off_t(size / 2))
                                guard sameBytes(middle, Array(content[(size / 2)..<(size / 2 + (1 << 20))])) else {
                                    throw PosixError(code: EIO, operation: "reader 0: the middle MiB differs")
                                }
                            }
                            return try readAll(fd)
                        }
                    }
                    results.withLock { $0[index] = result }
                }
                try #require(finished, "the readers were still blocked after 90 s\n\(mounts.logs())")
                for (index, result) in results.current.sorted(by: { $0.key < $1.key }) {
                    switch result {
                    case .success(let read):
                        #expect(sameBytes(read, content), "reader \(index): \(firstDifference(read, content) ?? -1)")
                    case .failure(let error):
                        Issue.record("reader \(index): \(error)")
                    }
                }
                let downloaded = try b.bytesDownloaded() - before
                #expect(downloaded > 0)
                #expect(
                    downloaded < Int64(size) * 3 / 2,
                    "4 readers downloaded \(downloaded) bytes of a \(size)-byte file: they must share one download")
                expectStates([path], in: ["local"], "shared.bin, read whole", timeout: markedDownloadedWithin)
            }
        }

        @Test func truncatingOpensDownloadNothingAndAppendKeepsTheOldContent() throws {
            try SyncedMounts.with(uploadDelay: 20) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                let files: [String: [UInt8]] = [
                    "trunc.bin": try randomBytes(2 << 20),
                    "truncate-zero.bin": try randomBytes(1 << 20),
                    "replaced.bin": try randomBytes(1 << 20),
                    "append.bin": try randomBytes(1 << 20),
                ]
                try writeFiles(files, under: a.root)
                try #require(a.expectSync())
                try #require(expectNamesArrive(files, under: b.root, "B attaching"))
                expectStates(files.keys.map { b.path($0) }, in: ["online"], "before the writes on B")
                let before = try b.bytesDownloaded()

                // O_TRUNC, truncate to 0, and replacing by rename: nothing to download.
                let truncated = bytes("written over the placeholder with O_TRUNC\n")
                try withFile(b.path("trunc.bin"), O_WRONLY | O_TRUNC) { try writeAll($0, truncated) }
                let zeroed = bytes("written after truncate(0)\n")
                try posix("truncate") { truncate(b.path("truncate-zero.bin"), 0) }
                try withFile(b.path("truncate-zero.bin"), O_WRONLY) { try writeAll($0, zeroed) }
                let replacement = bytes("renamed over the placeholder\n")
                try writeFile(b.path(".replaced.bin.tmp"), replacement)
                try posix("rename") { rename(b.path(".replaced.bin.tmp"), b.path("replaced.bin")) }
                #expect(
                    try b.bytesDownloaded() == before, "O_TRUNC, truncate(0) and rename over must download nothing")
                #expect(try readFile(b.path("trunc.bin")) == truncated)
                #expect(try readFile(b.path("truncate-zero.bin")) == zeroed)
                #expect(try readFile(b.path("replaced.bin")) == replacement)

                // O_APPEND without O_TRUNC: the whole file is downloaded before open returns.
                let tail = bytes("appended on B\n")
                try withFile(b.path("append.bin"), O_WRONLY | O_APPEND) { try writeAll($0, tail) }
                let appended = files["append.bin"]! + tail
                #expect(sameBytes(try readFile(b.path("append.bin")), appended), "B: old content + appended bytes")
                #expect(try b.bytesDownloaded() > before, "appending downloaded the old content")

                #expect(b.expectSync())
                let expected: [String: [UInt8]] = [
                    "trunc.bin": truncated, "truncate-zero.bin": zeroed, "replaced.bin": replacement,
                    "append.bin": appended,
                ]
                for (path, content) in expected.sorted(by: { $0.key < $1.key }) {
                    let arrived = waitUntil { sameBytes(try readFile(a.path(path)), content) }
                    #expect(arrived, "A did not get B's \(path)\n\(mounts.logs(limit: 1500))")
                }
            }
        }
    }
}
