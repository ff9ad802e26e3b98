import Foundation
import Glibc
import Testing

/// The harness itself: a mount is live after `make`, gone after `unmount`, cleared after `kill9`
/// by the next daemon, and `tearDown` never leaves a mount or a temporary directory behind.
@Suite("Harness")
struct HarnessTests {
    @Test(arguments: TestFolder.Kind.allCases)
    func folderIsUsableAndTornDown(kind: TestFolder.Kind) throws {
        let folder = try TestFolder.make(kind)
        var torn = false
        defer { if !torn { folder.tearDown() } }
        #expect(folder.root.hasPrefix("/tmp/syncfs-tests-"))
        #expect(isDirectory(try statPath(folder.root)))
        #expect(isDirectory(try statPath(folder.containerPath)))
        #expect(try listDirectory(folder.root).isEmpty)
        switch kind {
        case .plain:
            #expect(folder.daemonPID == nil)
            #expect(!TestFolder.isMounted(folder.root))
        case .mount:
            #expect(folder.daemonPID != nil)
            let entry = TestFolder.mountEntries().first { $0.mountPoint == folder.root }
            #expect(entry?.type.hasPrefix("fuse") == true, "mount entry: \(String(describing: entry))")
        }
        try writeFile(folder.path("hello"), "hello")
        #expect(try readText(folder.path("hello")) == "hello")
        folder.tearDown()
        torn = true
        #expect(!TestFolder.isMounted(folder.root))
        #expect(!pathExists(folder.baseDir))
        folder.tearDown()  // idempotent
    }

    @Test func unmountRemovesTheMountAndRemountRestoresIt() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        let first = try #require(folder.daemonPID)
        try writeFile(folder.path("kept"), "kept")
        try folder.unmount()
        #expect(folder.daemonPID == nil)
        #expect(!TestFolder.isMounted(folder.root))
        #expect(kill(first, 0) == -1, "the daemon process is gone")
        try folder.remount()
        #expect(TestFolder.isMounted(folder.root))
        #expect(try readText(folder.path("kept")) == "kept")
    }

    @Test func kill9LeavesADeadMountThatRemountClears() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        try writeFile(folder.path("f"), "data")
        try withFile(folder.path("f"), O_RDONLY) { fd in try posix("fsync") { fsync(fd) } }
        try folder.kill9()
        #expect(folder.daemonPID == nil)
        #expect(TestFolder.isMounted(folder.root), "a killed daemon leaves its kernel mount behind")
        expectErrno(ENOTCONN, "stat on a dead mount") {
            var info = stat()
            return stat(folder.path("f"), &info)
        }
        try folder.remount()
        #expect(TestFolder.mountEntries().filter { $0.mountPoint == folder.root }.count == 1)
        #expect(try readText(folder.path("f")) == "data")
    }

    @Test func remountWhileMountedIsRefused() throws {
        let folder = try TestFolder.make(.mount)
        defer { folder.tearDown() }
        #expect(throws: TestFolderError.self) { try folder.remount() }
    }

    /// The convergence oracle's names: the workload's, with conflict suffixes of either form, and
    /// a copy of a copy… whose name the daemon cut to 255 bytes (seed 0x2 made one).
    @Test func theConvergenceOracleKnowsConflictNamesCutToNameMax() {
        #expect(ConvergenceOracle.nameProblem("f2.txt", kind: "f") == nil)
        #expect(ConvergenceOracle.nameProblem("d1 (conflict from vm 2026-11-22 062701 2)", kind: "d") == nil)
        let cut =
            "f2" + String(repeating: " (conflict from vm 2026-11-22 062701)", count: 3)
            + String(repeating: " (conflict from vm 2026-11-22 062702)", count: 2) + " (conflict from vm 2026-11-"
            + " (conflict from vm 2026-11-22 062705).txt"
        #expect(cut.utf8.count == 255)
        #expect(ConvergenceOracle.nameProblem(cut, kind: "f") == nil)
        #expect(ConvergenceOracle.nameProblem(String(cut.dropFirst()), kind: "f") != nil, "not from the workload")
        #expect(ConvergenceOracle.nameProblem("f2 (conflict from vm 2026-11-).txt", kind: "f") != nil, "not cut")
        #expect(ConvergenceOracle.nameProblem(".save-A-3", kind: "f") != nil)
    }
}
