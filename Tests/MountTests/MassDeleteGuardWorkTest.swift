import Foundation
import Glibc
import TestSupport
import Testing

/// Everyday work never trips the mass-delete guard with its default thresholds
/// (doc/SEMANTICS.md, "Mass-delete guard"): the real programs on a real mount — `git clone` of a
/// repository with thousands of commits, a checkout across 2,000 commits and back, `git gc
/// --aggressive`, a 9,000-entry tarball extracted and removed, a build writing and deleting 5,000
/// object files, random work in the shape of `fsstress -p 20 -n 500`, and an editor (vim) saving
/// 200 files that have been in the container for a while. After all of it nothing is held, and
/// every change reached the other mount.
@Suite(.serialized)
struct MassDeleteGuardWorkTest {
    struct GuardedStatus: Decodable {
        struct Guard: Decodable {
            var held: Bool
            var counted: Int
        }

        var massDeleteGuard: Guard?
    }

    private func guardState(_ folder: TestFolder) throws -> GuardedStatus.Guard? {
        let status: GuardedStatus = try folder.statusJSON(of: folder.root)
        return status.massDeleteGuard
    }

    private func expectNotHeld(
        _ folder: TestFolder, after step: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let state = try? guardState(folder)
        #expect(state != nil, "status has the guard", sourceLocation: sourceLocation)
        #expect(
            state?.held == false, "\(step) tripped the guard\n\(folder.daemonLog())", sourceLocation: sourceLocation)
    }

    @discardableResult
    private func run(_ argv: [String], cwd: String, env: [String: String] = [:], _ what: String) -> ModelProcessResult {
        let result = ModelProcess.run(argv, cwd: cwd, env: env, timeout: 600)
        #expect(result.ok, "\(what): \(result)")
        return result
    }

    /// A repository of `commits` commits outside the mount, each adding one file
    /// (`f/NNNNN.txt`), made with `git fast-import`.
    private func makeRepository(at path: String, commits: Int, env: [String: String]) throws {
        run(["git", "init", "-q", "-b", "main", path], cwd: "/", env: env, "git init")
        var stream = ""
        for index in 0..<commits {
            let text = "file \(index)\n"
            stream += "commit refs/heads/main\ncommitter T <t@example.invalid> \(1_700_000_000 + index) +0000\n"
            stream += "data 2\nc\n"
            stream += "M 100644 inline f/\(String(format: "%05d", index)).txt\ndata \(text.utf8.count)\n\(text)\n"
        }
        let input = path + ".fast-import"
        try writeFile(input, stream)
        defer { unlink(input) }
        let result = ModelProcess.run(
            ["git", "fast-import", "--quiet"], cwd: path, env: env, stdinPath: input, timeout: 300)
        #expect(result.ok, "fast-import: \(result)")
        run(["git", "checkout", "-q", "main"], cwd: path, env: env, "checkout source")
    }

    @Test func everydayWorkNeverTripsTheGuard() throws {
        let scratch = ModelSys.makeTempDir("syncfs-guard-work")
        defer { ModelSys.removeTree(scratch) }
        let env = [
            "HOME": scratch, "XDG_CONFIG_HOME": scratch, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid",
        ]
        try makeRepository(at: scratch + "/source", commits: 2500, env: env)
        // The tarball: 9,000 files in 30 folders.
        let tree = scratch + "/tree"
        try makeDirectory(tree)
        for folder in 0..<30 {
            try makeDirectory("\(tree)/d\(folder)")
            for index in 0..<300 { try writeFile("\(tree)/d\(folder)/f\(index).c", "int f\(index);\n") }
        }
        run(["tar", "-cf", scratch + "/tree.tar", "-C", scratch, "tree"], cwd: scratch, "tar -c")

        try SyncedMounts.with { mounts in
            let (a, b) = (mounts.a, mounts.b)
            // Files that have been in the container for a while: made, synced, A remounted.
            try makeDirectory(a.path("docs"))
            for index in 0..<200 { try writeFile(a.path("docs/page\(index).txt"), "old text of page \(index)\n") }
            #expect(a.expectSync(timeout: 120))
            try a.unmount()
            try a.remount()

            run(["git", "clone", "-q", scratch + "/source", "repo"], cwd: a.root, env: env, "git clone")
            expectNotHeld(a, after: "git clone")
            run(["git", "checkout", "-q", "HEAD~2000"], cwd: a.path("repo"), env: env, "checkout HEAD~2000")
            run(["git", "checkout", "-q", "main"], cwd: a.path("repo"), env: env, "checkout back")
            expectNotHeld(a, after: "git checkout across 2,000 commits and back")
            run(["git", "gc", "--aggressive", "-q"], cwd: a.path("repo"), env: env, "git gc --aggressive")
            expectNotHeld(a, after: "git gc --aggressive")

            run(["tar", "-xf", scratch + "/tree.tar"], cwd: a.root, "tar -x")
            run(["rm", "-rf", "tree"], cwd: a.root, "rm -rf of the extracted tree")
            expectNotHeld(a, after: "extracting a 9,000-entry tarball and removing it")

            // A build: 5,000 object files (random bytes, as compiled code is dense), then `clean`.
            try makeDirectory(a.path("build"))
            for index in 0..<5000 {
                try writeFile(a.path("build/unit\(index).o"), (0..<1024).map { _ in UInt8.random(in: 0...255) })
            }
            run(["rm", "-rf", "build"], cwd: a.root, "make clean")
            expectNotHeld(a, after: "a build writing and deleting 5,000 object files")

            // The shape of `fsstress -p 20 -n 500`: 20 processes, 500 random operations each.
            try makeDirectory(a.path("stress"))
            let stress = (0..<20).map { seed in
                ModelProcess(
                    ["python3", "-c", Self.stressProgram, a.path("stress/p\(seed)"), String(seed), "500"], cwd: a.root)
            }
            for process in stress { #expect(process.wait(timeout: 600).ok, "stress worker") }
            expectNotHeld(a, after: "random work of 20 processes x 500 operations")

            // An editor saving 200 established files one after another (vim writes a backup,
            // writes the new file and deletes the backup: the old entry goes).
            for index in 0..<200 {
                run(
                    [
                        "vim", "-u", "NONE", "-i", "NONE", "-n", "-es", "-c", "set backupcopy=no", "-c", "%s/old/new/",
                        "-c", "wq",
                        "docs/page\(index).txt",
                    ], cwd: a.root, env: ["HOME": scratch], "vim save")
            }
            expectNotHeld(a, after: "an editor saving 200 files")

            #expect(a.expectSync(timeout: 300), "A's queue drains: nothing is held")
            expectNotHeld(a, after: "the whole session")
            #expect(
                waitUntil(timeout: 120) {
                    try readText(b.path("docs/page199.txt")) == "new text of page 199\n"
                        && readText(b.path("repo/f/02499.txt")) == "file 2499\n"
                        && access(b.path("tree"), F_OK) != 0 && access(b.path("build"), F_OK) != 0
                }, "B has every change\n\(mounts.logs())")
        }
    }

    /// Random creates, writes, renames, truncates, links-by-copy, mkdirs and deletes below its
    /// own folder (argv: folder, seed, operations).
    static let stressProgram = """
        import os, random, sys
        root, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        rng = random.Random(seed)
        os.makedirs(root, exist_ok=True)
        def entries():
            found = []
            for folder, dirs, files in os.walk(root):
                found += [os.path.join(folder, n) for n in files]
            return found
        def folders():
            return [f for f, _, _ in os.walk(root)]
        for step in range(count):
            op = rng.choice(["create", "create", "write", "rename", "truncate", "unlink", "mkdir", "rmdir"])
            files = entries()
            try:
                if op == "create" or not files and op in ("write", "rename", "truncate", "unlink"):
                    path = os.path.join(rng.choice(folders()), "f%d" % step)
                    with open(path, "wb") as f:
                        f.write(os.urandom(rng.randrange(0, 8192)))
                elif op == "write":
                    with open(rng.choice(files), "r+b") as f:
                        f.seek(rng.randrange(0, 8192))
                        f.write(os.urandom(rng.randrange(1, 4096)))
                elif op == "rename":
                    os.rename(rng.choice(files), os.path.join(rng.choice(folders()), "r%d" % step))
                elif op == "truncate":
                    os.truncate(rng.choice(files), rng.randrange(0, 8192))
                elif op == "unlink":
                    os.unlink(rng.choice(files))
                elif op == "mkdir":
                    os.mkdir(os.path.join(rng.choice(folders()), "d%d" % step))
                elif op == "rmdir":
                    candidates = [f for f in folders() if f != root and not os.listdir(f)]
                    if candidates:
                        os.rmdir(rng.choice(candidates))
            except FileNotFoundError:
                pass
        """
}
