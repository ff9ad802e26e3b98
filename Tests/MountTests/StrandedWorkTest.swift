import Foundation
import Glibc
import TestSupport
import Testing

/// Work is never stranded (doc/CLI.md, "`syncfs-mount list`", "Changes waiting elsewhere"):
/// `list` shows every mount and every state directory whose changes wait for a mount, with the
/// command that resumes it; `mount` of the same container elsewhere says so; and `list` never
/// reads what another user planted in the state root.
@Suite(.serialized)
struct StrandedWorkTest {
    /// Makes a state directory under the default root holding `count` queued changes while not
    /// mounted (written while the container was unreachable); returns it.
    private func strand(
        _ sandbox: CommandSandbox, container: String, at mnt: String, count: Int, _ extra: [String] = []
    ) throws -> String {
        let outage = sandbox.base + "/outage-\(UUID())"
        let mounted = try sandbox.mount(
            container, at: mnt, ["--upload-delay", "20"] + extra, extraEnvironment: OutageSwitch.environment(outage))
        #expect(mounted.ok, "\(mounted)")
        try writeFile(outage, "")
        for index in 0..<count { try writeFile(mnt + "/offline-\(index).txt", "written offline \(index)") }
        #expect(waitUntil { (try sandbox.list().mounts.first { $0.mountpoint == mnt }?.queued ?? 0) == count })
        let unmounted = try sandbox.unmount(mnt, syncTimeout: 1)
        #expect(unmounted.ok, "\(unmounted)")
        unlink(outage)
        let waiting = try sandbox.list().waiting.filter { $0.mountpoint == mnt }
        try #require(waiting.count == 1, "\(waiting)")
        return waiting[0].stateDirectory
    }

    /// Every file of `directory` (not below) with its size and modification time.
    private func snapshot(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted().map { name in
            var info = stat()
            _ = lstat(directory + "/" + name, &info)
            return "\(name) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }
    }

    @Test func listShowsMountsAndStateDirectoriesWithChangesWaiting() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let container = sandbox.base + "/c"
        #expect(try sandbox.run(["init", container]).ok)
        let (a, b) = (sandbox.base + "/a", sandbox.base + "/b")
        #expect(try sandbox.mount(container, at: a).ok)
        #expect(try sandbox.mount(container, at: b).ok)
        let both = try sandbox.list()
        #expect(both.mounts.map(\.mountpoint) == [a, b], "\(both)")
        for mount in both.mounts {
            #expect(mount.container == container && mount.state == "live" && mount.online == true, "\(mount)")
            #expect(mount.queued == 0)
            #expect(mount.stateDirectory.hasPrefix(sandbox.stateRoot + "/"))
        }
        #expect(both.waiting.isEmpty, "\(both.waiting)")
        let text = try sandbox.run(["list"])
        #expect(text.ok && text.stdout.contains(a) && text.stdout.contains("online, 0 changes queued"), "\(text)")

        // b unmounts clean: it is not listed as waiting.
        #expect(try sandbox.unmount(b).ok)
        #expect(try sandbox.list().waiting.isEmpty)

        // c's changes are queued offline and stay when it unmounts: listed, with its resume command.
        let stranded = try strand(sandbox, container: container, at: sandbox.base + "/c-mnt", count: 2)
        let listing = try sandbox.list()
        #expect(listing.mounts.map(\.mountpoint) == [a], "\(listing.mounts)")
        let waiting = try #require(listing.waiting.first)
        #expect(listing.waiting.count == 1)
        #expect(waiting.queued == 2 && waiting.container == container, "\(waiting)")
        let resume = "syncfs-mount mount \(container) \(sandbox.base)/c-mnt --state-dir \(stranded)"
        #expect(waiting.resume == resume)
        let people = try sandbox.run(["list"])
        #expect(people.stdout.contains("2 changes") && people.stdout.contains(resume), "\(people)")
        // Reading it changed nothing: the state directory is as the daemon left it.
        let before = try snapshot(stranded)
        #expect(try sandbox.list().waiting.first?.queued == 2)
        let after = try snapshot(stranded)
        #expect(after == before, "\(before) -> \(after)")

        // The resume command (this build's binary for `syncfs-mount`) uploads them: nothing waits.
        let words = resume.split(separator: " ").map(String.init)
        let resumed = try sandbox.run(Array(words.dropFirst()))
        #expect(resumed.ok, "\(resumed)")
        #expect(waitUntil { try readText(a + "/offline-1.txt") == "written offline 1" })
        #expect(try sandbox.unmount(sandbox.base + "/c-mnt").ok)
        #expect(try sandbox.list().waiting.isEmpty)
        #expect(try sandbox.unmount(a).ok)
    }

    /// A server mount's resume command names its token file: it runs as printed.
    @Test func aServerMountsResumeCommandNamesItsTokenFile() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let server = try ServerProcess.start(root: sandbox.base + "/server/root")
        defer { _ = server.stop() }
        let token = URL(fileURLWithPath: try server.createToken(container: "box")).standardizedFileURL.path
        let mnt = sandbox.base + "/team"
        let stranded = try strand(sandbox, container: server.url("box"), at: mnt, count: 1, ["--token-file", token])
        let waiting = try #require(try sandbox.list().waiting.first)
        #expect(waiting.container == server.url("box"))
        #expect(
            waiting.resume
                == "syncfs-mount mount \(server.url("box")) \(mnt) --state-dir \(stranded) --token-file \(token)")
        let resumed = try sandbox.run(Array(waiting.resume.split(separator: " ").map(String.init).dropFirst()))
        #expect(resumed.ok, "\(resumed)")
        #expect(waitUntil(timeout: 30) { try sandbox.list().mounts.first?.queued == 0 })
        #expect(try sandbox.list().waiting.isEmpty)
        #expect(try sandbox.unmount(mnt).ok)
    }

    @Test func mountingTheContainerElsewhereSaysWhereItsChangesWait() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let container = sandbox.base + "/c"
        #expect(try sandbox.run(["init", container]).ok)
        let stranded = try strand(sandbox, container: container, at: sandbox.base + "/old", count: 1)

        let elsewhere = try sandbox.mount(container, at: sandbox.base + "/new")
        #expect(elsewhere.ok, "the mount still proceeds: \(elsewhere)")
        #expect(elsewhere.stderr.contains("1 change to \(container)"), "\(elsewhere.stderr)")
        #expect(elsewhere.stderr.contains(stranded), "\(elsewhere.stderr)")
        #expect(
            elsewhere.stderr.contains("syncfs-mount mount \(container) \(sandbox.base)/old --state-dir \(stranded)"),
            "\(elsewhere.stderr)")
        #expect(try sandbox.unmount(sandbox.base + "/new").ok)

        // Another path to the same container (a symlink) is the same container: its ID says so.
        try posix("symlink") { symlink(container, sandbox.base + "/alias") }
        let aliased = try sandbox.mount(sandbox.base + "/alias", at: sandbox.base + "/via-alias")
        #expect(aliased.ok && aliased.stderr.contains(stranded), "\(aliased)")
        #expect(try sandbox.unmount(sandbox.base + "/via-alias").ok)

        // Another container's mount says nothing about it.
        #expect(try sandbox.run(["init", sandbox.base + "/other"]).ok)
        let other = try sandbox.mount(sandbox.base + "/other", at: sandbox.base + "/other-mnt")
        #expect(other.ok && !other.stderr.contains("note:"), "\(other)")
        #expect(try sandbox.unmount(sandbox.base + "/other-mnt").ok)
    }

    /// Think like another local user: a symlink or a directory of theirs planted in the state
    /// root, or a state root of theirs, never makes `list` read or print their data.
    @Test func listNeverReadsAnotherUsersStateDirectories() throws {
        try #require(geteuid() == 0, "needs root to make directories owned by another user")
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let container = sandbox.base + "/c"
        #expect(try sandbox.run(["init", container]).ok)
        let stranded = try strand(sandbox, container: container, at: sandbox.base + "/mnt", count: 1)

        // Their state directory, outside our root, whose facts name a secret.
        let theirs = sandbox.base + "/theirs"
        #expect(ModelProcess.run(["cp", "-a", stranded, theirs]).ok)
        let secret = "SECRET-of-uid-65534"
        #expect(
            ModelProcess.run([
                "sqlite3", theirs + "/state.db", "UPDATE meta SET value = '\(secret)' WHERE key = 'container'",
            ]).ok)
        // 1. A symlink to it in our root; 2. a copy of it owned by them in our root.
        try posix("symlink") { symlink(theirs, sandbox.stateRoot + "/planted-link") }
        #expect(ModelProcess.run(["cp", "-a", theirs, sandbox.stateRoot + "/planted-dir"]).ok)
        #expect(ModelProcess.run(["chown", "-R", "65534:65534", sandbox.stateRoot + "/planted-dir", theirs]).ok)

        let listing = try sandbox.list()
        #expect(listing.waiting.map(\.stateDirectory) == [stranded], "\(listing.waiting)")
        let text = try sandbox.run(["list"])
        #expect(!(text.stdout + text.stderr).contains(secret), "\(text)")
        #expect(text.stderr.contains("planted-link: a symlink; not followed"), "said why: \(text)")
        #expect(text.stderr.contains("planted-dir: belongs to uid 65534; not read"), "said why: \(text)")

        // 3. A state root that is not ours: nothing in it is read.
        #expect(ModelProcess.run(["chown", "65534", sandbox.stateRoot]).ok)
        let foreign = try sandbox.list()
        #expect(foreign.waiting.isEmpty, "\(foreign.waiting)")
        #expect(foreign.skipped.contains { $0.contains("belongs to uid 65534") }, "\(foreign.skipped)")
        #expect(ModelProcess.run(["chown", "0", sandbox.stateRoot]).ok)
    }
}

/// A daemon killed with SIGKILL leaves its registry entry: `list` shows the mount as dead with
/// the command that clears it and carries on, and that command works.
@Suite(.serialized)
struct DeadMountListTest {
    @Test func aDeadMountIsListedWithTheCommandThatMountsItAgain() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let container = sandbox.base + "/c"
        let mnt = sandbox.base + "/mnt"
        #expect(try sandbox.run(["init", container]).ok)
        let outage = sandbox.base + "/outage"
        #expect(
            try sandbox.mount(
                container, at: mnt, ["--upload-delay", "20"], extraEnvironment: OutageSwitch.environment(outage)
            )
            .ok)
        try writeFile(outage, "")
        try writeFile(mnt + "/unsent.txt", "queued when the daemon dies")
        #expect(waitUntil { try sandbox.list().mounts.first?.queued == 1 })
        // fsyncdir: every metadata change made before it, the queued upload's row included, is
        // on disk (doc/SEMANTICS.md, "Durability") before the kill.
        try withFile(mnt, O_RDONLY | O_DIRECTORY) { fd in try posix("fsync(root)") { fsync(fd) } }
        let live = try #require(try sandbox.list().mounts.first)
        try posix("kill") { kill(live.pid, SIGKILL) }
        #expect(waitUntil { kill(live.pid, 0) != 0 })

        let listing = try sandbox.list()
        let dead = try #require(listing.mounts.first)
        #expect(dead.state == "dead" && dead.queued == 1, "its queue is read from its -wal: \(dead)")
        let resume = "syncfs-mount mount \(container) \(mnt) --state-dir \(live.stateDirectory)"
        #expect(dead.resume == resume)
        #expect(listing.waiting.isEmpty, "shown once, as the dead mount: \(listing.waiting)")
        let text = try sandbox.run(["list"])
        #expect(text.stdout.contains("DEAD") && text.stdout.contains(resume), "\(text)")

        unlink(outage)
        let again = try sandbox.run(Array(resume.split(separator: " ").map(String.init).dropFirst()))
        #expect(again.ok, "\(again)")
        #expect(try sandbox.list().mounts.first?.state == "live")
        #expect(waitUntil { try sandbox.list().mounts.first?.queued == 0 }, "nothing lost: the change is uploaded")
        #expect(LocalContainerMarker.exists(container))
        #expect(try sandbox.unmount(mnt).ok)
    }

    /// A stopped daemon (SIGSTOP) does not hang `list`: it is shown as not answering.
    @Test func aStuckDaemonIsListedAsNotAnswering() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        #expect(try sandbox.run(["init", sandbox.base + "/c"]).ok)
        #expect(try sandbox.mount(sandbox.base + "/c", at: sandbox.base + "/mnt").ok)
        let live = try #require(try sandbox.list().mounts.first)
        try posix("kill") { kill(live.pid, SIGSTOP) }
        defer { kill(live.pid, SIGCONT) }
        let started = Date()
        let stuck = try sandbox.run(["list", "--json"], timeout: 60)
        #expect(!stuck.timedOut && stuck.ok, "\(stuck)")
        #expect(stuck.stdout.contains("\"state\":\"not-answering\""), "\(stuck)")
        #expect(Date().timeIntervalSince(started) < 30)
        kill(live.pid, SIGCONT)
        #expect(waitUntil { try sandbox.list().mounts.first?.state == "live" })
        #expect(try sandbox.unmount(sandbox.base + "/mnt").ok)
    }
}
