import Foundation
import Glibc
import TestSupport
import Testing

/// Pinning and evicting (doc/SEMANTICS.md, "Pinning and evicting" and "State and control:
/// extended attributes"; doc/CLI.md, `pin`, `unpin`, `evict`): a pinned folder's files are
/// downloaded now and later; `user.syncfs.pinned` reads and writes the pin; the virtual attributes
/// are never listed and the read-only ones refuse writes; `evict` frees clean files only.
extension PlaceholderTests {
    @Suite struct PinAndEvict {
        @Test func pinningAFolderDownloadsEverythingBelowItNowAndLater() throws {
            try SyncedMounts.with(uploadDelay: 20) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                var files: [String: [UInt8]] = [
                    "pinned-folder/one.bin": try randomBytes(1 << 20),
                    "pinned-folder/two.txt": patternBytes(count: 5000, seed: 2),
                    "pinned-folder/inner/three.bin": try randomBytes(300_000),
                    "elsewhere/loose.bin": try randomBytes(200_000),
                    "elsewhere/other.bin": try randomBytes(100_000),
                ]
                try writeFiles(files, under: a.root)
                try setXattr(a.path("elsewhere/loose.bin"), "user.color", bytes("blue"))
                try #require(a.expectSync())
                try #require(expectNamesArrive(files, under: b.root, "B attaching"))
                expectStates(files.keys.map { b.path($0) }, in: ["online"], "before pinning")

                let folder = b.path("pinned-folder")
                try b.expectCommand(["pin", folder])
                let below = files.keys.filter { $0.hasPrefix("pinned-folder/") }.map { b.path($0) }
                expectStates(below, in: ["local"], "right after `pin` returned")
                #expect(describePinned(folder) == "1")
                #expect(describePinned(b.path("pinned-folder/inner/three.bin")) == "inherited")
                #expect(describePinned(b.path("pinned-folder/inner")) == "inherited")
                #expect(describePinned(b.path("elsewhere/loose.bin")) == "0")
                #expect(try b.pathStatus(b.path("pinned-folder/one.bin")).pinned == PinnedValue("inherited"))
                #expect(try b.pathStatus(folder).pinned == PinnedValue("1"))
                #expect(describeState(b.path("elsewhere/loose.bin")) == "online", "pinning is per folder")

                // A file added later below the pinned folder is downloaded without being read.
                let later = try randomBytes(400_000)
                files["pinned-folder/inner/later.bin"] = later
                try writeFile(a.path("pinned-folder/inner/later.bin"), later)
                #expect(a.expectSync())
                let downloaded = waitUntil(timeout: 20) {
                    try syncfsState(b.path("pinned-folder/inner/later.bin")) == "local"
                }
                #expect(
                    downloaded,
                    "later.bin is \(describeState(b.path("pinned-folder/inner/later.bin")))\n\(mounts.logs(limit: 1500))"
                )
                expectContents(files, under: b.root, "B, all files")

                // Unpinning below a pinned folder is refused, by the CLI and by the attribute.
                let refused = try b.expectCommand(["unpin", b.path("pinned-folder/one.bin")], status: 1)
                // The folder itself, not only as part of the file's path.
                let namesFolder = refused.stderr.components(separatedBy: "pinned-folder").dropFirst().contains {
                    !$0.hasPrefix("/")
                }
                #expect(namesFolder, "the message names the folder: \(refused)")
                expectErrno(EPERM, "setxattr pinned 0 below a pinned folder") {
                    Linux.setxattr(b.path("pinned-folder/two.txt"), "user.syncfs.pinned", bytes("0"), 0)
                }
                #expect(describePinned(b.path("pinned-folder/one.bin")) == "inherited")

                // The attribute pins and unpins a single file.
                let loose = b.path("elsewhere/loose.bin")
                for (value, shown) in [
                    ("1", "1"), ("0", "0"), ("true", "1"), ("false", "0"), ("yes", "1"), ("no", "0"),
                ] {
                    try setPinned(loose, value)
                    #expect(describePinned(loose) == shown, "after writing \(value)")
                }
                try setPinned(loose, "1")
                let pinnedLoose = waitUntil { try syncfsState(loose) == "local" }
                #expect(pinnedLoose, "a file pinned by its attribute is downloaded: \(describeState(loose))")
                try removeXattr(loose, "user.syncfs.pinned")
                #expect(describePinned(loose) == "0", "removexattr unpins")
                for value in ["2", "maybe", "", "on"] {
                    expectErrno(EINVAL, "setxattr user.syncfs.pinned \(value.debugDescription)") {
                        Linux.setxattr(loose, "user.syncfs.pinned", bytes(value), 0)
                    }
                }
                for name in ["state", "progress", "error", "no-such-name"] {
                    expectErrno(EPERM, "setxattr user.syncfs.\(name)") {
                        Linux.setxattr(loose, "user.syncfs.\(name)", bytes("local"), 0)
                    }
                }
                expectErrno(ENODATA, "getxattr user.syncfs.no-such-name") {
                    Linux.getxattr(loose, "user.syncfs.no-such-name", size: 64).0
                }
                expectErrno(ENODATA, "getxattr user.syncfs.progress with no transfer") {
                    Linux.getxattr(loose, "user.syncfs.progress", size: 64).0
                }

                // Never listed, on files (pinned, placeholder, with a user attribute) and folders.
                for path in [folder, b.path("pinned-folder/one.bin"), loose, b.path("elsewhere/other.bin"), b.root] {
                    let names = try listXattrs(path)
                    #expect(!names.contains { $0.hasPrefix("user.syncfs") }, "listxattr(\(path)): \(names)")
                }
                #expect(try listXattrs(loose) == ["user.color"])

                // Unpinning the folder: evictable again, still downloaded.
                try b.expectCommand(["unpin", folder])
                #expect(describePinned(folder) == "0")
                #expect(describePinned(b.path("pinned-folder/one.bin")) == "0")
                expectStates(below + [b.path("pinned-folder/inner/later.bin")], in: ["local"], "after unpin")
            }
        }

        @Test func evictFreesCleanFilesOnly() throws {
            // B keeps its own changes queued for a minute: an edited file stays `modified`.
            try SyncedMounts.with(uploadDelay: 20, uploadDelayB: 60_000) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                let files: [String: [UInt8]] = [
                    "clean.bin": try randomBytes(1 << 20),
                    "edited.txt": patternBytes(count: 3000, seed: 7),
                    "open.bin": try randomBytes(500_000),
                    "pinned.bin": try randomBytes(200_000),
                ]
                try writeFiles(files, under: a.root)
                try #require(a.expectSync())
                try #require(expectNamesArrive(files, under: b.root, "B attaching"))
                expectContents(files, under: b.root, "B downloading every file")
                expectStates(
                    files.keys.map { b.path($0) }, in: ["local"], "after reading", timeout: markedDownloadedWithin)

                // A clean file: evicted, a placeholder again, and it downloads again when read.
                let clean = b.path("clean.bin")
                expectEvicted(b, clean)
                #expect(describeState(clean) == "online")
                #expect(try b.pathStatus(clean).localBytes == 0)
                let before = try b.bytesDownloaded()
                #expect(sameBytes(try readFile(clean), files["clean.bin"]!), "clean.bin after eviction")
                #expect(try b.bytesDownloaded() > before, "reading the evicted file downloaded it again")
                expectStates([clean], in: ["local"], "clean.bin read again", timeout: markedDownloadedWithin)

                // A file with changes not yet uploaded is kept.
                let edited = b.path("edited.txt")
                let edit = bytes("edited on B, queued for a minute\n")
                try writeFile(edited, edit)
                #expect(describeState(edited) == "modified")
                let refused = try b.expectCommand(["evict", edited], status: 1)
                #expect(refused.stderr.contains("edited.txt"), "the message names the file: \(refused)")
                #expect(try readFile(edited) == edit)
                #expect(describeState(edited) == "modified")

                // An open file is kept; once closed it can go.
                let open = b.path("open.bin")
                let fd = try openFile(open, O_RDONLY)
                var isOpen = true
                defer { if isOpen { close(fd) } }
                let refusedOpen = try b.expectCommand(["evict", open], status: 1)
                #expect(refusedOpen.stderr.contains("open.bin"), "the message names the file: \(refusedOpen)")
                #expect(describeState(open) == "local")
                #expect(sameBytes(try readAll(fd), files["open.bin"]!), "read through the descriptor held open")
                close(fd)
                isOpen = false
                expectEvicted(b, open)
                #expect(describeState(open) == "online")

                // A pinned file is kept.
                let pinned = b.path("pinned.bin")
                try setPinned(pinned, "1")
                let refusedPinned = try b.expectCommand(["evict", pinned], status: 1)
                #expect(refusedPinned.stderr.contains("pinned.bin"), "the message names the file: \(refusedPinned)")
                #expect(describeState(pinned) == "local")

                // The whole folder: the clean file goes, the others are named and kept.
                let all = try b.expectCommand(["evict", b.root], status: 1)
                #expect(all.stderr.contains("edited.txt") && all.stderr.contains("pinned.bin"), "\(all)")
                #expect(describeState(clean) == "online")
                #expect(describeState(edited) == "modified")
                #expect(describeState(pinned) == "local")
                #expect(try readFile(edited) == edit)
                #expect(try readFile(a.path("edited.txt")) == files["edited.txt"]!, "B's edit is still queued")
            }
        }

        /// Runs `evict PATH` until it exits 0, for up to 10 s, and records an issue if it never
        /// does. The kernel tells the daemon about a `close` asynchronously (FUSE release), so a
        /// file closed a moment ago may still count as open for a short while.
        private func expectEvicted(
            _ folder: TestFolder, _ path: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            var last: ModelProcessResult?
            let evicted = waitUntil(timeout: 10) {
                last = try folder.runCommand(["evict", path])
                return last?.ok == true
            }
            if !evicted {
                Issue.record(
                    "evict \(path) never exited 0: \(last.map { "\($0)" } ?? "not run")\n\(folder.daemonLog(limit: 1500))",
                    sourceLocation: sourceLocation)
            }
        }
    }
}
