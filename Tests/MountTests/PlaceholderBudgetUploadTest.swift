import Foundation
import TestSupport
import Testing

/// Files written on the mount count against the cache budget but can be evicted only once
/// uploaded (doc/SEMANTICS.md, "The cache budget"; doc/CLI.md, `sync`): the upload that leaves
/// them clean asks for the next budget check, and `sync` returns only once the budget holds.
extension PlaceholderTests.CacheBudget {
    /// 12 MiB of new files (1 MiB each) for an 8 MiB budget.
    static func twelveMebibytes() throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for index in 0..<12 { files[String(format: "w-%02d.bin", index)] = try randomBytes(1 << 20) }
        return files
    }

    /// Uploaded 3 s after they were written, when the budget keeper has looked (and could evict
    /// nothing: every file was modified) and gone idle: the uploads alone bring the cache back
    /// within the budget within seconds, without a `sync` and without anything read or written.
    @Test func writtenFilesAreEvictedOnceUploadedWithoutASync() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "3000", "--cache-size", "8M"])
        defer { folder.tearDown() }
        let files = try Self.twelveMebibytes()
        try writeFiles(files, under: folder.root)
        var pending: Int?
        let uploaded = waitUntil(timeout: 60) {
            pending = try folder.syncStatus().pendingEntries
            return pending == 0
        }
        try #require(uploaded, "\(pending.map(String.init) ?? "?") still queued\n\(folder.daemonLog(limit: 1500))")
        Self.expectWithinBudget(folder, "once the written files were uploaded", timeout: 10)
        expectContents(files, under: folder.root, "the written files, read back")
    }

    /// Queued for ten minutes, then `sync`: once it returns, the files it uploaded are evicted
    /// as far as the budget needs.
    @Test func syncReturnsOnlyOnceTheBudgetHolds() throws {
        let folder = try TestFolder.make(.mount, mountArguments: ["--upload-delay", "600000", "--cache-size", "8M"])
        defer { folder.tearDown() }
        let files = try Self.twelveMebibytes()
        try writeFiles(files, under: folder.root)
        try #require(folder.expectSync(timeout: 60))
        Self.expectWithinBudgetNow(folder, "right after `sync` returned")
        expectContents(files, under: folder.root, "the written files, read back")
    }
}
