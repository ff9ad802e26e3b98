import Foundation
import Glibc
import TestSupport
import Testing

/// Crash test: writer threads modify files on the folder and fsync some of them, journaling (outside
/// the folder) which content each fsync covered. The daemon is killed with SIGKILL at several points,
/// the folder is mounted again, and then:
/// - every file whose fsync returned holds its fsync'd content, or content written after it;
/// - the tree is readable and consistent (every listed name stat()s and reads);
/// - new files can be written;
/// - the dead kernel mount was cleared by the new daemon (exactly one mount on the mount point).
@Suite(.serialized)
struct CrashTest {
    enum Point: String, CaseIterable {
        case after200ms = "0.2 s into the workload"
        case after1s = "1 s into the workload"
        case midFsyncStorm = "in the middle of an fsync storm"
        case midRenameStorm = "in the middle of save-by-rename and unlink/create churn"
    }

    @Test(arguments: TestFolder.Kind.allCases)
    func fsyncedDataSurvivesKill9(kind: TestFolder.Kind) throws {
        let folder = try TestFolder.make(kind)
        let journalDir = ModelSys.makeTempDir("syncfs-crash-journal")
        defer {
            folder.tearDown()
            ModelSys.removeTree(journalDir)
            #expect(!ModelMounts.isMounted(folder.root), "mount left behind at \(folder.root)")
        }
        let seed = SeededGenerator.seed(env: "SYNCFS_CRASH_SEED", default: 0xC8A5_4001)
        let state = CrashState(root: folder.root, journalPath: journalDir + "/journal.log", threads: 3, seed: seed)
        try #require(state.setUp(), "setting up the initial files failed: \(state.errors)")
        state.clearErrors()

        for (cycle, point) in Point.allCases.enumerated() {
            let context =
                "cycle \(cycle + 1) (kill \(point.rawValue), \(kind.rawValue), SYNCFS_CRASH_SEED=0x\(String(seed, radix: 16)))"
            let workload = CrashWorkload(
                state: state, cycle: cycle,
                mode: point == .midFsyncStorm ? .fsyncStorm : point == .midRenameStorm ? .renameStorm : .mixed)
            workload.start()
            switch point {
            case .after200ms: usleep(200_000)
            case .after1s: usleep(1_000_000)
            case .midFsyncStorm, .midRenameStorm:
                usleep(300_000)  // scenario: the storm under way
                let deadline = Date().addingTimeInterval(5)
                while state.inFsync() == 0 && Date() < deadline { usleep(200) }  // fine polls: the kill lands mid-fsync
            }
            let inFsyncAtKill = state.inFsync()
            state.killed(true)
            try folder.kill9()
            if kind == .mount {
                #expect(
                    ModelMounts.isMounted(folder.root),
                    "\(context): after kill9 the dead kernel mount should still be there")
                var sfs = statvfs()
                let rc = statvfs(folder.root, &sfs)
                let e = errno
                #expect(
                    rc != 0 && e == ENOTCONN,
                    "\(context): statvfs on the dead mount gave rc \(rc) \(ModelSys.errnoName(e)), expected ENOTCONN")
            }
            let joined = workload.stopAndJoin(timeout: 30)
            try #require(joined, "\(context): writer threads still blocked 30 s after the daemon was killed")
            let errorsBeforeKill = state.errors.filter { !$0.contains("after kill") }
            #expect(errorsBeforeKill.isEmpty, "\(context): errors before the kill: \(errorsBeforeKill.prefix(10))")
            let durable = state.durableEventsThisCycle()
            print(
                "crash[\(kind.rawValue)] \(context): \(state.opsThisCycle()) ops, \(durable) fsyncs acknowledged, "
                    + "\(inFsyncAtKill) threads inside fsync at the kill")
            #expect(durable > 0, "\(context): the workload acknowledged no fsync, so the cycle tests nothing")
            state.clearErrors()

            do {
                try folder.remount()
            } catch {
                Issue.record("\(context): remount after kill9 failed: \(error)")
                // Clear the dead mount ourselves, so the durability checks below still run (and report).
                if ModelMounts.isMounted(folder.root) {
                    let r = ModelProcess.run(["fusermount3", "-u", "-z", folder.root])
                    try #require(r.ok, "\(context): fusermount3 -u -z: \(r)")
                }
                try folder.remount()
            }
            state.killed(false)
            if kind == .mount {
                let count = ModelSys.mountCount(at: folder.root)
                #expect(
                    count == 1,
                    "\(context): \(count) mounts on \(folder.root) after remount; the dead one was not cleared")
                let fs = ModelSys.mountPoints().last { $0.point == folder.root }?.fstype ?? "none"
                #expect(fs.hasPrefix("fuse"), "\(context): mount point has \(fs) after remount")
            }
            verify(state: state, context: context)
            #expect(state.rebaseline(), "\(context): fsync of the recovered files failed: \(state.errors.prefix(10))")
            state.clearErrors()
        }

        // A clean unmount and mount at the end: every file exactly as last fsync'd.
        try folder.unmount()
        try folder.remount()
        verify(state: state, context: "after the final clean remount (\(kind.rawValue))", exact: true)
        if kind == .mount { try verifyUploaded(state: state, folder: folder) }
    }

    /// What reached the container after the crashes is exactly what the files hold (never a
    /// size recorded ahead of the bytes, nothing lost by mistake): after `sync`, a second mount
    /// of the container reads every tracked file as this one does.
    func verifyUploaded(state: CrashState, folder: TestFolder) throws {
        #expect(folder.expectSync(timeout: 60), "sync after the crashes")
        let other = try TestFolder.make(.mount, sharedContainer: folder.containerPath)
        defer { other.tearDown() }
        for (rel, expected) in state.newestContents().sorted(by: { $0.key < $1.key }) {
            let read = ModelSys.readAll(other.path(rel))
            switch (read, expected) {
            case (.success(let bytes), let expected?):
                #expect(
                    bytes == expected, "\(rel): the container holds \(bytes.count) bytes, the file \(expected.count)")
            case (.failure(let error), nil) where error.code == ENOENT: break
            default:
                Issue.record(
                    "\(rel): the container's version reads as \(read), the file is \(expected.map { "\($0.count) bytes" } ?? "absent")"
                )
            }
        }
    }

    func verify(state: CrashState, context: String, exact: Bool = false) {
        // The tree: every listed name stat()s; every file reads fully, matching st_size.
        let tree = ModelTree.snapshot(state.root)
        for p in tree.problems { Issue.record("\(context): tree inconsistent: \(p)") }
        for (path, e) in tree.entries.sorted(by: { $0.key < $1.key }) {
            for p in e.problems { Issue.record("\(context): \(path): \(p)") }
        }
        // Every acknowledged fsync.
        for failure in state.checkDurable(exact: exact).prefix(20) {
            Issue.record("\(context): \(failure)")
        }
        // The folder still takes new files.
        let probe = state.root + "/probe-\(UInt32.random(in: 0...UInt32.max))"
        var rng = SeededGenerator(seed: UInt64(getpid()))
        let data = rng.bytes(150_000)
        let fd = open(probe, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            Issue.record("\(context): creating a new file failed: open: \(ModelSys.errnoName(errno))")
            return
        }
        let w = ModelSys.writeAll(fd: fd, data)
        let s = fsync(fd)
        let se = errno
        close(fd)
        #expect(w == .success(data.count), "\(context): writing a new file: \(w)")
        #expect(s == 0, "\(context): fsync of a new file: \(ModelSys.errnoName(se))")
        let back = ModelSys.readAll(probe)
        #expect(back == .success(data), "\(context): reading the new file back gave different content")
        #expect(unlink(probe) == 0, "\(context): unlink of the new file: \(ModelSys.errnoName(errno))")
    }
}
