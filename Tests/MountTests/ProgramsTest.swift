import Foundation
import Glibc
import TestSupport
import Testing

/// Real programs on the folder, each on a plain directory and on the mount: git, tar, SQLite in WAL
/// mode with concurrent writers, cp -a. Each one's result is checked, then checked again after the
/// folder was unmounted and mounted again.
@Suite(.serialized)
struct ProgramsTest {
    /// Runs a program and records an issue (with its output) when it fails.
    @discardableResult
    static func run(
        _ argv: [String], cwd: String? = nil, env: [String: String] = [:], stdinPath: String? = nil,
        timeout: Double = 300, _ context: String
    ) -> ModelProcessResult {
        let r = ModelProcess.run(argv, cwd: cwd, env: env, stdinPath: stdinPath, timeout: timeout)
        if !r.ok { Issue.record("\(context): \(r)") }
        return r
    }

    static func expectSame(
        _ a: ModelTree, _ b: ModelTree, labels: (String, String), exactMtimes: Set<String>?,
        compareRootMode: Bool = false, _ context: String
    ) {
        let d = ModelTree.diff(a, b, labels: labels, exactMtimes: exactMtimes, compareRootMode: compareRootMode)
        #expect(d.isEmpty, "\(context): \(d.count) differences:\n\(d.prefix(40).joined(separator: "\n"))")
    }

    static func remount(_ folder: TestFolder) throws {
        try folder.unmount()
        try folder.remount()
    }

    static func tearDown(_ folder: TestFolder, _ scratch: String) {
        folder.tearDown()
        ModelSys.removeTree(scratch)
        #expect(!ModelMounts.isMounted(folder.root), "mount left behind at \(folder.root)")
    }

    // MARK: git

    @Test(arguments: TestFolder.Kind.allCases)
    func gitCommitsCloneFsckStatus(kind: TestFolder.Kind) throws {
        let folder = try TestFolder.make(kind)
        let scratch = ModelSys.makeTempDir("syncfs-programs-git")
        defer { Self.tearDown(folder, scratch) }
        let env = [
            "HOME": scratch, "XDG_CONFIG_HOME": scratch, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Model Test", "GIT_AUTHOR_EMAIL": "model@example.invalid",
            "GIT_COMMITTER_NAME": "Model Test", "GIT_COMMITTER_EMAIL": "model@example.invalid",
        ]
        let repo = folder.root + "/repo"
        @discardableResult
        func git(_ args: [String], in dir: String, _ what: String) -> ModelProcessResult {
            Self.run(
                ["git", "-c", "init.defaultBranch=main", "-c", "gc.auto=0"] + args, cwd: dir, env: env,
                "[\(kind.rawValue)] git \(what)")
        }
        try #require(git(["init", "-q", "repo"], in: folder.root, "init").ok)

        // 1: a generated tree.
        let stats = try ProgramsTreeGen.generate(
            at: repo, seed: 0x617, files: 200, symlinks: 20, xattrs: false, times: false)
        git(["add", "-A"], in: repo, "add (1)")
        git(["commit", "-q", "-m", "one: \(stats)"], in: repo, "commit 1")
        // 2: modify files in place (append and rewrite).
        let files = ModelTree.snapshot(repo).entries.filter { $0.value.kind == "f" && !$0.key.hasPrefix(".git/") }.keys
            .sorted()
        for (i, f) in files.enumerated() where i % 5 == 0 {
            let fd = open(repo + "/" + f, O_WRONLY | O_APPEND | O_CLOEXEC)
            if fd < 0 { _ = chmod(repo + "/" + f, 0o644) }
            let fd2 = fd >= 0 ? fd : open(repo + "/" + f, O_WRONLY | O_APPEND | O_CLOEXEC)
            try #require(fd2 >= 0, "open \(f): \(ModelSys.errnoName(errno))")
            _ = ModelSys.writeAll(fd: fd2, Array("appended line \(i)\n".utf8))
            close(fd2)
        }
        git(["commit", "-q", "-a", "-m", "two: appends"], in: repo, "commit 2")
        // 3: renames of files and of a directory.
        git(["mv", files[1], "renamed-file-1"], in: repo, "mv file")
        let dir = ModelSys.parent(files[7])
        if !dir.isEmpty { git(["mv", dir, "renamed-dir"], in: repo, "mv dir") }
        git(["commit", "-q", "-m", "three: renames"], in: repo, "commit 3")
        // 4: deletions.
        let tracked = git(["ls-files", "-z"], in: repo, "ls-files").stdout.split(separator: "\0").map(String.init)
        try #require(tracked.count > 30, "[\(kind.rawValue)] git ls-files lists \(tracked.count) files")
        git(["rm", "-q", tracked[2], tracked[10], tracked[20]], in: repo, "rm")
        git(["commit", "-q", "-m", "four: deletions"], in: repo, "commit 4")
        // 5: a large binary file and a tag, then gc (packs, prunes, renames files into place).
        var rng = SeededGenerator(seed: 5)
        let big = rng.bytes(3_000_000)
        try #require(FileManager.default.createFile(atPath: repo + "/big.bin", contents: Data(big)), "create big.bin")
        git(["add", "big.bin"], in: repo, "add big.bin")
        git(["commit", "-q", "-m", "five: big binary"], in: repo, "commit 5")
        git(["tag", "-a", "-m", "v1", "v1"], in: repo, "tag")
        git(["gc", "-q", "--prune=now"], in: repo, "gc")

        // Clones into the folder: the local way (hardlinks or copies) and through the pack protocol.
        git(["clone", "-q", "repo", "clone-local"], in: folder.root, "clone (local)")
        git(["clone", "-q", "--no-local", "repo", "clone-pack"], in: folder.root, "clone --no-local")

        func check(_ phase: String) {
            var heads: [String] = []
            for name in ["repo", "clone-local", "clone-pack"] {
                let dir = folder.root + "/" + name
                let fsck = git(["fsck", "--full", "--strict"], in: dir, "fsck --full in \(name) \(phase)")
                #expect(
                    fsck.ok && !fsck.stderr.contains("error") && !fsck.stderr.contains("missing"),
                    "[\(kind.rawValue)] git fsck --full in \(name) \(phase): \(fsck)")
                let status = git(
                    ["status", "--porcelain", "--untracked-files=all"], in: dir, "status in \(name) \(phase)")
                #expect(
                    status.ok && status.stdout.isEmpty,
                    "[\(kind.rawValue)] git status in \(name) \(phase) is not clean: \(status)")
                let count = git(["rev-list", "--count", "HEAD"], in: dir, "rev-list in \(name)")
                #expect(
                    count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "5",
                    "[\(kind.rawValue)] \(name) \(phase) has \(count.stdout) commits, expected 5")
                heads.append(git(["rev-parse", "HEAD"], in: dir, "rev-parse in \(name)").stdout)
            }
            #expect(Set(heads).count == 1, "[\(kind.rawValue)] HEADs differ \(phase): \(heads)")
            // The clones check out what was committed.
            let notGit = { (k: String, _: ModelEntry) in k != ".git" && !k.hasPrefix(".git/") }
            let local = ModelTree.snapshot(folder.root + "/clone-local").filtered(notGit)
            let pack = ModelTree.snapshot(folder.root + "/clone-pack").filtered(notGit)
            let original = ModelTree.snapshot(repo).filtered { notGit($0, $1) && $1.kind != "d" }
            Self.expectSame(
                local.contentOnly(keepExecBit: true), pack.contentOnly(keepExecBit: true),
                labels: ("clone-local", "clone-pack"), exactMtimes: [], "[\(kind.rawValue)] clones \(phase)")
            Self.expectSame(
                original.contentOnly(keepExecBit: false),
                local.filtered { $1.kind != "d" }.contentOnly(keepExecBit: false),
                labels: ("repo", "clone-local"), exactMtimes: [], "[\(kind.rawValue)] clone vs repository \(phase)")
            #expect(
                local.entries["big.bin"]?.hash == "\(big.count):\(ModelHash.hex(ModelHash.fnv1a(big)))",
                "[\(kind.rawValue)] big.bin in the clone \(phase) differs")
        }
        check("right after cloning")
        try Self.remount(folder)
        check("after unmount + remount")
        // And git still writes after the remount.
        try #require(
            FileManager.default.createFile(
                atPath: folder.root + "/clone-pack/after-remount.txt", contents: Data("x\n".utf8)))
        git(["add", "after-remount.txt"], in: folder.root + "/clone-pack", "add after remount")
        #expect(git(["commit", "-q", "-m", "six"], in: folder.root + "/clone-pack", "commit after remount").ok)
        let fsck = git(["fsck", "--full"], in: folder.root + "/clone-pack", "final fsck")
        #expect(fsck.ok, "[\(kind.rawValue)] final git fsck: \(fsck)")
    }

    // MARK: tar

    @Test(arguments: TestFolder.Kind.allCases)
    func tarExtractMatchesSource(kind: TestFolder.Kind) throws {
        let folder = try TestFolder.make(kind)
        let scratch = ModelSys.makeTempDir("syncfs-programs-tar")
        defer { Self.tearDown(folder, scratch) }
        let src = scratch + "/src"
        try #require(mkdir(src, 0o755) == 0)
        let stats = try ProgramsTreeGen.generate(at: src, seed: 0x7A2, files: 300, symlinks: 30)
        let tarball = scratch + "/tree.tar"
        // POSIX format: nanosecond mtimes and xattrs go into the archive.
        try #require(
            Self.run(
                ["tar", "--format=posix", "--xattrs", "--xattrs-include=user.*", "-cf", tarball, "-C", src, "."],
                "[\(kind.rawValue)] tar c (outside the folder)"
            ).ok)
        let dst = folder.root + "/extracted"
        try #require(mkdir(dst, 0o700) == 0, "mkdir \(dst): \(ModelSys.errnoName(errno))")
        Self.run(
            ["tar", "--xattrs", "--xattrs-include=user.*", "-xpf", tarball, "-C", dst],
            "[\(kind.rawValue)] tar x into the folder")

        func check(_ phase: String) {
            let diff = ModelProcess.run(["diff", "-r", "--no-dereference", src, dst])
            #expect(diff.ok, "[\(kind.rawValue)] diff -r \(phase): \(diff)")
            let compare = ModelProcess.run(["tar", "--compare", "-f", tarball, "-C", dst])
            #expect(compare.ok, "[\(kind.rawValue)] tar --compare \(phase): \(compare)")
            Self.expectSame(
                ModelTree.snapshot(src), ModelTree.snapshot(dst), labels: ("source", "extracted"),
                exactMtimes: nil, compareRootMode: true, "[\(kind.rawValue)] extracted tree (\(stats)) \(phase)")
        }
        check("after extraction")
        try Self.remount(folder)
        check("after unmount + remount")
    }

    // MARK: SQLite

    @Test(arguments: TestFolder.Kind.allCases)
    func sqliteWALConcurrentWriters(kind: TestFolder.Kind) throws {
        let folder = try TestFolder.make(kind)
        let scratch = ModelSys.makeTempDir("syncfs-programs-sqlite")
        defer { Self.tearDown(folder, scratch) }
        let db = folder.root + "/db/test.sqlite"
        try #require(mkdir(folder.root + "/db", 0o755) == 0)
        let writers = 4
        let rows = 250
        let initSQL = scratch + "/init.sql"
        try """
        PRAGMA journal_mode=WAL;
        CREATE TABLE t(id INTEGER PRIMARY KEY, writer INTEGER NOT NULL, seq INTEGER NOT NULL, payload BLOB NOT NULL, UNIQUE(writer, seq));
        """.write(toFile: initSQL, atomically: true, encoding: .utf8)
        let initResult = Self.run(["sqlite3", "-bail", db], stdinPath: initSQL, "[\(kind.rawValue)] sqlite3 create")
        try #require(
            initResult.ok && initResult.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "wal",
            "[\(kind.rawValue)] journal_mode=WAL answered \(initResult)")

        // Writers: single-row autocommit inserts, and batches in BEGIN IMMEDIATE transactions.
        var processes: [ModelProcess] = []
        for w in 0..<writers {
            var script = ".timeout 60000\n"
            var seq = 0
            while seq < rows {
                if w % 2 == 1 && seq % 50 == 0 {
                    script += "BEGIN IMMEDIATE;\n"
                    for _ in 0..<25 where seq < rows {
                        script +=
                            "INSERT INTO t(writer, seq, payload) VALUES(\(w), \(seq), randomblob(\(100 + seq % 900)));\n"
                        seq += 1
                    }
                    script += "COMMIT;\n"
                } else {
                    script +=
                        "INSERT INTO t(writer, seq, payload) VALUES(\(w), \(seq), randomblob(\(100 + seq % 3000)));\n"
                    seq += 1
                }
            }
            let path = scratch + "/writer\(w).sql"
            try script.write(toFile: path, atomically: true, encoding: .utf8)
            processes.append(ModelProcess(["sqlite3", "-bail", db], stdinPath: path))
        }
        // A reader during the writes: counts never go backwards.
        let readerSQL = scratch + "/reader.sql"
        try (".timeout 60000\n" + String(repeating: "SELECT count(*) FROM t;\n", count: 300)).write(
            toFile: readerSQL, atomically: true, encoding: .utf8)
        let reader = ModelProcess(["sqlite3", "-bail", db], stdinPath: readerSQL)
        for (w, p) in processes.enumerated() {
            let r = p.wait(timeout: 300)
            #expect(r.ok && r.stderr.isEmpty, "[\(kind.rawValue)] writer \(w): \(r)")
        }
        let rr = reader.wait(timeout: 300)
        #expect(rr.ok && rr.stderr.isEmpty, "[\(kind.rawValue)] reader: \(rr)")
        let counts = rr.stdout.split(separator: "\n").compactMap { Int($0) }
        #expect(counts.count == 300, "[\(kind.rawValue)] reader printed \(counts.count) counts, expected 300")
        #expect(
            counts == counts.sorted(), "[\(kind.rawValue)] the row count went backwards while writers ran: \(counts)")

        func check(_ phase: String) {
            let q = scratch + "/check.sql"
            try? """
            PRAGMA integrity_check;
            SELECT count(*), count(DISTINCT writer || '-' || seq) FROM t;
            SELECT writer, count(*), min(seq), max(seq) FROM t GROUP BY writer ORDER BY writer;
            """.write(toFile: q, atomically: true, encoding: .utf8)
            let r = Self.run(["sqlite3", "-bail", db], stdinPath: q, "[\(kind.rawValue)] sqlite3 checks \(phase)")
            let expected =
                ["ok", "\(writers * rows)|\(writers * rows)"] + (0..<writers).map { "\($0)|\(rows)|0|\(rows - 1)" }
            #expect(
                r.stdout.split(separator: "\n").map(String.init) == expected,
                "[\(kind.rawValue)] \(phase): integrity_check / row counts: got \(r.stdout) expected \(expected)")
        }
        check("after the concurrent writers")
        let cp = scratch + "/checkpoint.sql"
        try "PRAGMA wal_checkpoint(TRUNCATE);\n".write(toFile: cp, atomically: true, encoding: .utf8)
        let ck = Self.run(["sqlite3", "-bail", db], stdinPath: cp, "[\(kind.rawValue)] checkpoint")
        #expect(ck.stdout.hasPrefix("0|"), "[\(kind.rawValue)] wal_checkpoint(TRUNCATE) was busy or failed: \(ck)")
        try Self.remount(folder)
        check("after unmount + remount")
    }

    // MARK: cp -a

    @Test(arguments: TestFolder.Kind.allCases)
    func cpArchiveMatchesSource(kind: TestFolder.Kind) throws {
        let folder = try TestFolder.make(kind)
        let scratch = ModelSys.makeTempDir("syncfs-programs-cp")
        defer { Self.tearDown(folder, scratch) }
        let src = scratch + "/src"
        try #require(mkdir(src, 0o755) == 0)
        let stats = try ProgramsTreeGen.generate(at: src, seed: 0xC9A, files: 300, symlinks: 30)
        let dst = folder.root + "/copy"
        Self.run(["cp", "-a", src, dst], "[\(kind.rawValue)] cp -a into the folder")
        let back = scratch + "/back"

        func check(_ phase: String) {
            let diff = ModelProcess.run(["diff", "-r", "--no-dereference", src, dst])
            #expect(diff.ok, "[\(kind.rawValue)] diff -r \(phase): \(diff)")
            Self.expectSame(
                ModelTree.snapshot(src), ModelTree.snapshot(dst), labels: ("source", "copy"),
                exactMtimes: nil, compareRootMode: true, "[\(kind.rawValue)] cp -a copy (\(stats)) \(phase)")
        }
        check("after cp -a")
        try Self.remount(folder)
        check("after unmount + remount")
        // And out again: what the folder gives to cp -a is the same tree.
        Self.run(["cp", "-a", dst, back], "[\(kind.rawValue)] cp -a out of the folder")
        Self.expectSame(
            ModelTree.snapshot(src), ModelTree.snapshot(back), labels: ("source", "copied back out"),
            exactMtimes: nil, compareRootMode: true, "[\(kind.rawValue)] cp -a round trip")
    }
}
