import Foundation
import Glibc
import TestSupport
import Testing

/// A damaged `state.db` (cut short, or garbage in its header) on a disk with room: the mount
/// reports damage as damage (exit 65, naming `syncfs-mount recover`), never as a full disk, and
/// keeps its full-disk reserve; `recover` gets the cached content back and sets the damaged
/// database aside, and the next mount starts over from the container. doc/CLI.md, "recover";
/// doc/SEMANTICS.md, "A lost state database".
@Suite struct DamagedStateTest {
    enum Damage: String, CaseIterable, Sendable {
        case truncatedToHalf, garbageInHeader

        func apply(to path: String) throws {
            var info = stat()
            try posix("stat") { stat(path, &info) }
            switch self {
            case .truncatedToHalf:
                try posix("truncate") { truncate(path, info.st_size / 2) }
            case .garbageInHeader:
                try withFile(path, O_WRONLY) { fd in
                    let garbage = [UInt8](repeating: 0xA5, count: 100)
                    #expect(pwrite(fd, garbage, garbage.count, 0) == garbage.count)
                }
            }
        }
    }

    @Test(arguments: Damage.allCases) func aDamagedDatabaseIsReportedAsDamageAndRecovered(damage: Damage) throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        // Enough entries for a database of several pages.
        for index in 0..<200 { try writeFile(folder.path("file-\(index).txt"), "content \(index)\n") }
        try #require(folder.expectSync())
        try folder.unmount()
        let reserve = folder.stateDir + "/reserve"
        var info = stat()
        try #require(lstat(reserve, &info) == 0, "a mount keeps a reserve")
        let reserveSize = info.st_size
        try damage.apply(to: folder.stateDir + "/state.db")

        var refusal = ""
        do {
            try folder.remount()
            Issue.record("the mount started over a damaged database")
        } catch {
            refusal = "\(error)"
        }
        #expect(refusal.contains("exit status 65"), "\(refusal)")
        #expect(refusal.contains("is damaged"), "\(refusal)")
        #expect(refusal.contains("syncfs-mount recover \(folder.stateDir) --into"), "names the way out: \(refusal)")
        #expect(!folder.daemonLog().contains("released its reserve"), "\(folder.daemonLog())")
        #expect(lstat(reserve, &info) == 0 && info.st_size == reserveSize, "the reserve is kept")

        let rescue = folder.baseDir + "/rescue"
        try makeDirectory(rescue)
        let result = ModelProcess.run(
            [try TestFolder.binaryPath(), "recover", folder.stateDir, "--into", rescue], timeout: 60)
        #expect(result.ok, "\(result)")
        #expect(result.stdout.contains("damaged database was set aside"), "\(result.stdout)")
        let stateFiles = try listDirectory(folder.stateDir)
        let setAside = stateFiles.filter {
            $0.hasPrefix("state.db.damaged-") && !$0.contains("-wal") && !$0.contains("-shm")
        }
        #expect(setAside.count == 1, "\(stateFiles)")
        #expect(!stateFiles.contains("state.db"), "\(stateFiles)")

        try folder.remount()
        #expect(
            waitUntil(timeout: 30) { try readFile(folder.path("file-199.txt")) == bytes("content 199\n") },
            "starts over from the container: \(folder.daemonLog())")
    }
}
