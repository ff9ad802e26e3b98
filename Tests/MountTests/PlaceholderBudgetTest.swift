import Foundation
import Glibc
import TestSupport
import Testing

/// The cache budget (doc/SEMANTICS.md, "The cache budget"; doc/CLI.md, `mount --cache-size`):
/// B is mounted with `--cache-size 8M`; downloads and B's own writes beyond it are evicted, least
/// recently used first, once they are clean and closed; pinned files stay; every file still reads
/// back right (downloading again).
extension PlaceholderTests {
    @Suite struct CacheBudget {
        static let budget: Int64 = 8 << 20

        @Test func downloadsAndWritesStayWithinTheBudget() throws {
            try SyncedMounts.with(uploadDelay: 20, argumentsB: ["--cache-size", "8M"]) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                #expect(try b.syncStatus().cacheBudget == Self.budget, "--cache-size 8M is 8 MiB")
                var files: [String: [UInt8]] = [:]
                for index in 0..<24 { files[String(format: "set/f-%02d.bin", index)] = try randomBytes(1 << 20) }
                try writeFiles(files, under: a.root)
                try #require(a.expectSync())
                try #require(expectNamesArrive(files, under: b.root, "B attaching"))

                let pinned = b.path("set/f-00.bin")
                try b.expectCommand(["pin", pinned])
                #expect(describeState(pinned) == "local")

                // One by one: each read downloads, older ones are evicted to make room.
                for (path, content) in files.sorted(by: { $0.key < $1.key }) {
                    let read = try readFile(b.path(path))
                    #expect(sameBytes(read, content), "\(path) on first read")
                }
                Self.expectWithinBudget(b, "after reading 24 MiB one file at a time")
                let local = files.keys.filter { (try? syncfsState(b.path($0))) == "local" }
                #expect(local.count <= 8, "at most 8 MiB of 1 MiB files stay local: \(local.sorted())")
                #expect(describeState(pinned) == "local", "the pinned file is never evicted")

                expectContents(files, under: b.root, "B reading every file again")
                Self.expectWithinBudget(b, "after reading every file again")

                // B's own new files: 24 MiB copied in; once uploaded they are clean and evictable.
                let source = mounts.baseDir + "/copy-source"
                var copied: [String: [UInt8]] = [:]
                for index in 0..<24 { copied[String(format: "new/n-%02d.bin", index)] = try randomBytes(1 << 20) }
                try makeDirectory(source)
                try writeFiles(copied, under: source)
                let copy = ModelProcess.run(["cp", "-r", source + "/new", b.root], timeout: 120)
                try #require(copy.ok, "\(copy)\n\(mounts.logs(limit: 1500))")
                #expect(b.expectSync(timeout: 60))
                Self.expectWithinBudgetNow(b, "right after copying 24 MiB onto B and `sync` returned")
                #expect(describeState(pinned) == "local", "the pinned file is never evicted")
                #expect(describePinned(pinned) == "1")
                expectContents(copied, under: b.root, "B's copied files, read back on B")
                expectNamesArrive(copied, under: a.root, "A getting B's copied files")
                expectContents(copied, under: a.root, "B's copied files, on A")
                Self.expectWithinBudget(b, "after reading the copied files back")
            }
        }

        @Test func aFileLargerThanTheBudgetCanBeReadAndIsEvictedOnceClosed() throws {
            try SyncedMounts.with(uploadDelay: 20, argumentsB: ["--cache-size", "8M"]) { mounts in
                let (a, b) = (mounts.a, mounts.b)
                let content = try randomBytes(12 << 20)
                try writeFile(a.path("large.bin"), content)
                try #require(a.expectSync())
                try #require(expectNamesArrive(["large.bin": content], under: b.root, "B attaching"))
                let read = try readFile(b.path("large.bin"))
                #expect(sameBytes(read, content), "the 12 MiB file through an 8 MiB budget")
                let evicted = waitUntil { try syncfsState(b.path("large.bin")) == "online" }
                #expect(evicted, "large.bin is \(describeState(b.path("large.bin"))) after it was closed")
                Self.expectWithinBudget(b, "after the large file was closed")
            }
        }

        /// Waits until `cachedBytes` of `folder` is at most the budget (the budget keeper looks at
        /// most a second after content grew, a file was closed or an upload left a file clean;
        /// `timeout` leaves room for a loaded machine); records an issue otherwise.
        static func expectWithinBudget(
            _ folder: TestFolder, _ context: String, timeout: Double = 15,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            var last: Int64?
            let within = waitUntil(timeout: timeout) {
                last = try folder.syncStatus().cachedBytes
                return last.map { $0 <= budget } ?? false
            }
            if !within { recordOverBudget(folder, context, last, sourceLocation) }
        }

        /// `cachedBytes` of `folder` is at most the budget now, without waiting (what `sync`
        /// promises once it returned); records an issue otherwise.
        static func expectWithinBudgetNow(
            _ folder: TestFolder, _ context: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let cached = try? folder.syncStatus().cachedBytes
            if cached.map({ $0 <= budget }) != true { recordOverBudget(folder, context, cached, sourceLocation) }
        }

        private static func recordOverBudget(
            _ folder: TestFolder, _ context: String, _ cached: Int64?, _ sourceLocation: SourceLocation
        ) {
            let shown = cached.map(String.init) ?? "missing"
            Issue.record(
                "\(context): cachedBytes \(shown) > budget \(budget)\n\(folder.daemonLog(limit: 1500))",
                sourceLocation: sourceLocation)
        }
    }
}
