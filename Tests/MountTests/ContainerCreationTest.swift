import Foundation
import Glibc
import Testing

/// A new container is made only on request (doc/CLI.md, "`syncfs-mount init PATH`"): a mistyped
/// path is refused with exit 65 naming both remedies, and nothing at all is created.
@Suite(.serialized)
struct ContainerCreationTest {
    @Test func aPathThatIsNotAContainerIsRefusedAndNothingIsCreated() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let typo = sandbox.base + "/typo/deeper/container"
        for extra in [[], ["--foreground"]] {
            let refused = try sandbox.mount(typo, at: sandbox.base + "/mnt", extra)
            #expect(refused.status == 65, "\(refused)")
            #expect(refused.stderr.contains("syncfs-mount init \(typo)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--create"), "\(refused.stderr)")
            #expect(!pathExists(sandbox.base + "/typo"), "no directory appears, not even a parent")
            #expect(!pathExists(sandbox.base + "/state-home"), "no state directory either")
            #expect(!TestFolder.isMounted(sandbox.base + "/mnt"))
        }
        // An empty directory (an unplugged disk's mount point) is not a container either.
        let empty = sandbox.base + "/empty"
        try makeDirectory(empty, mode: 0o755)
        let refused = try sandbox.mount(empty, at: sandbox.base + "/mnt", ["--state-dir", sandbox.base + "/s"])
        #expect(refused.status == 65, "\(refused)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty)
        #expect(!pathExists(sandbox.base + "/s"))
        // A non-empty directory: no remedy would make it one.
        try makeDirectory(sandbox.base + "/photos")
        try writeFile(sandbox.base + "/photos/a.jpg", "jpeg")
        let foreign = try sandbox.mount(sandbox.base + "/photos", at: sandbox.base + "/mnt")
        #expect(foreign.status == 65, "\(foreign)")
        #expect(foreign.stderr.contains("new or empty directory"), "\(foreign.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.base + "/photos") == ["a.jpg"])
    }

    @Test func initMakesAPrivateEmptyContainerOnlyWhereAsked() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let orphan = try sandbox.run(["init", sandbox.base + "/missing/c"])
        #expect(orphan.status == 65, "\(orphan)")
        #expect(orphan.stderr.contains("mkdir -p \(sandbox.base)/missing"), "\(orphan.stderr)")
        #expect(!pathExists(sandbox.base + "/missing"))

        let made = try sandbox.run(["init", sandbox.base + "/c"])
        #expect(made.ok, "\(made)")
        var info = stat()
        #expect(stat(sandbox.base + "/c", &info) == 0 && info.st_mode & 0o777 == 0o700, "mode 0700 under umask 022")
        #expect(pathExists(sandbox.base + "/c/syncfs-container.json"))
        let again = try sandbox.run(["init", sandbox.base + "/c"])
        #expect(again.status == 65 && again.stderr.contains("already a SyncFS container"), "\(again)")

        try makeDirectory(sandbox.base + "/full")
        try writeFile(sandbox.base + "/full/keep.txt", "mine")
        let full = try sandbox.run(["init", sandbox.base + "/full"])
        #expect(full.status == 65, "\(full)")
        #expect(!pathExists(sandbox.base + "/full/syncfs-container.json"))
        try makeDirectory(sandbox.base + "/empty", mode: 0o755)
        #expect(try sandbox.run(["init", sandbox.base + "/empty"]).ok)
        #expect(pathExists(sandbox.base + "/empty/syncfs-container.json"))

        // The made container mounts without --create.
        let mounted = try sandbox.mount(sandbox.base + "/c", at: sandbox.base + "/mnt")
        #expect(mounted.ok, "\(mounted)")
        try writeFile(sandbox.base + "/mnt/hello.txt", "hello")
        #expect(try sandbox.unmount(sandbox.base + "/mnt").ok)
    }

    /// `--create` makes the container on the first mount; a later mount needs no flag, and one
    /// while the container is away (an unplugged disk) starts offline and still creates nothing.
    @Test func mountCreateMakesTheContainerAndLaterMountsNeverDo() throws {
        let sandbox = try CommandSandbox()
        defer { sandbox.tearDown() }
        let container = sandbox.base + "/c"
        let mnt = sandbox.base + "/mnt"
        let created = try sandbox.mount(container, at: mnt, ["--create"])
        #expect(created.ok, "\(created)")
        #expect(LocalContainerMarker.exists(container))
        try writeFile(mnt + "/a.txt", "a")
        #expect(try sandbox.unmount(mnt).ok)

        let again = try sandbox.mount(container, at: mnt)
        #expect(again.ok, "\(again)")
        #expect(try readText(mnt + "/a.txt") == "a")
        #expect(try sandbox.unmount(mnt).ok)

        try posix("rename") { rename(container, sandbox.base + "/away") }
        let offline = try sandbox.mount(container, at: mnt)
        #expect(offline.ok, "a mount of a known container starts offline: \(offline)")
        #expect(try readText(mnt + "/a.txt") == "a")
        #expect(!pathExists(container), "no container was created in place of the missing one")
        _ = try sandbox.unmount(mnt, syncTimeout: 1)
        #expect(!TestFolder.isMounted(mnt))
    }
}

enum LocalContainerMarker {
    static func exists(_ container: String) -> Bool { pathExists(container + "/syncfs-container.json") }
}
