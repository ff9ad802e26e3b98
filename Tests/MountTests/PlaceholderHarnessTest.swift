import Foundation
import Glibc
import TestSupport
import Testing

/// The harness the placeholder tests add: extra mount arguments for A and for B, and the decoding
/// of `status --json` (doc/CLI.md) for the mount and for one path.
extension PlaceholderTests {
    @Suite struct Harness {
        @Test func extraMountArgumentsReachEachSideAndBothMountsAreTornDown() throws {
            var seen: (roots: [String], base: String, pids: [pid_t])?
            try SyncedMounts.with(argumentsA: ["--log-level", "debug"], argumentsB: ["--compression-level", "0"]) {
                mounts in
                let (a, b) = (mounts.a, mounts.b)
                seen = ([a.root, b.root], mounts.baseDir, [a.daemonPID, b.daemonPID].compactMap { $0 })
                #expect(TestFolder.isMounted(a.root) && TestFolder.isMounted(b.root))
                // Each daemon's log starts with its command line.
                let headerA = a.daemonLog().split(separator: "\n").first ?? ""
                let headerB = b.daemonLog().split(separator: "\n").first ?? ""
                #expect(headerA.hasSuffix("--upload-delay 20 --log-level debug"), "A: \(headerA)")
                #expect(headerB.hasSuffix("--upload-delay 20 --compression-level 0"), "B: \(headerB)")
                try writeFile(a.path("f"), "from A")
                #expect(waitUntil { try readText(b.path("f")) == "from A" }, "the two mounts still sync")
            }
            let (roots, base, pids) = try #require(seen)
            #expect(pids.count == 2)
            for root in roots { #expect(!TestFolder.isMounted(root), "\(root) is still mounted") }
            for pid in pids { #expect(kill(pid, 0) == -1, "daemon \(pid) still runs") }
            #expect(!pathExists(base), "\(base) was not removed")
        }

        @Test func statusLinesDecode() throws {
            let mount = """
                {"bytesDownloaded":5,"bytesUploaded":1,"cacheBudget":8388608,"cachedBytes":1024,\
                "encodedBytesUploaded":1,"failing":[{"attempts":2,"fileID":"ab","path":"x","reason":"r"}],\
                "feedCaughtUp":true,"files":{"local":1,"modified":0,"online":3,"pinned":0},\
                "lastContainerError":null,"online":false,"pendingBytes":0,"pendingEntries":0,\
                "transfers":[{"direction":"download","done":1,"path":"big.bin","total":2}]}
                """
            let status = try JSONDecoder().decode(MountSyncStatus.self, from: Data(mount.utf8))
            #expect(status.online == false && status.feedCaughtUp == true && status.cacheBudget == 8 << 20)
            #expect(status.files?["online"] == 3 && status.transfers?.first?.direction == "download")
            // The fields of the queue alone (before placeholders) still decode.
            let queueOnly = """
                {"bytesDownloaded":0,"bytesUploaded":0,"encodedBytesUploaded":0,"failing":[],\
                "lastContainerError":null,"pendingBytes":0,"pendingEntries":0}
                """
            #expect(try JSONDecoder().decode(MountSyncStatus.self, from: Data(queueOnly.utf8)).online == nil)

            for (value, text) in [
                ("\"inherited\"", "inherited"), ("\"1\"", "1"), ("1", "1"), ("0", "0"), ("true", "1"),
            ] {
                let line = """
                    {"path":"/m/d/f","kind":"file","state":"online","pinned":\(value),"size":10,\
                    "localBytes":0,"progress":null,"error":null}
                    """
                let path = try JSONDecoder().decode(PathSyncStatus.self, from: Data(line.utf8))
                #expect(path.pinned == PinnedValue(text), "pinned \(value)")
                #expect(path.files == nil && path.progress == nil && path.state == "online")
            }
            let folder = """
                {"path":"/m/d","kind":"directory","state":"local","pinned":"0","size":0,"localBytes":0,\
                "progress":{"done":1,"total":4},"error":"boom","files":{"online":2,"local":1}}
                """
            let decoded = try JSONDecoder().decode(PathSyncStatus.self, from: Data(folder.utf8))
            #expect(decoded.files?["online"] == 2 && decoded.progress?.total == 4 && decoded.error == "boom")
        }
    }
}
