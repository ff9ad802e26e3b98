import Foundation
import Glibc
import Testing

/// `mount --allow-remote-setuid` does what doc/CLI.md says: the kernel mount is without `nosuid`
/// and `nodev` (read from /proc/mounts), and a setuid program in the folder runs with its
/// owner's rights; without the option the mount is `nosuid,nodev` and the bit has no effect. The
/// mount helper's `-o suid,dev,allow_remote_setuid` is the same option. Only root can mount a
/// FUSE folder that honours setuid (fusermount3 drops `suid` and `dev` for everyone else), so for
/// another user the option is refused (exit 77) before anything is mounted.
@Suite(.serialized)
struct RemoteSetuidMountTest {
    /// The options /proc/mounts shows for `mountpoint`.
    static func kernelOptions(_ mountpoint: String) -> [String] {
        let text = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 3, fields[1] == mountpoint { return fields[3].split(separator: ",").map(String.init) }
        }
        return []
    }

    /// A setuid-root copy of `id` in `folder`, run as nobody: its effective user ID.
    static func effectiveUserOfSetuidProgram(in folder: TestFolder) throws -> String {
        // nobody must reach the program: the test's temporary directory is 0700.
        try posix("chmod") { chmod(folder.baseDir, 0o755) }
        let program = folder.path("id")
        try writeFile(program, try readFile("/usr/bin/id"))
        try posix("chmod") { chmod(program, 0o4755) }
        let run = try runProcess(
            ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", program, "-u"], timeout: 30)
        #expect(run.status == 0, "\(run.output)")
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func theOptionMountsWithoutNosuidAndNodevAndSetuidTakesEffect() throws {
        try #require(geteuid() == 0, "the mount tests run as root")
        let allowing = try TestFolder.make(.mount, mountArguments: ["--allow-remote-setuid"])
        defer { allowing.tearDown() }
        let options = Self.kernelOptions(allowing.root)
        #expect(!options.isEmpty, "\(allowing.root) is not in /proc/mounts")
        #expect(!options.contains("nosuid") && !options.contains("nodev"), "\(options)")
        #expect(try Self.effectiveUserOfSetuidProgram(in: allowing) == "0", "the setuid bit takes effect")

        let plain = try TestFolder.make(.mount)
        defer { plain.tearDown() }
        let plainOptions = Self.kernelOptions(plain.root)
        #expect(plainOptions.contains("nosuid") && plainOptions.contains("nodev"), "\(plainOptions)")
        #expect(try Self.effectiveUserOfSetuidProgram(in: plain) != "0", "nosuid: the bit has no effect")
    }

    @Test func theMountHelpersSuidOptionsMountWithoutNosuidAndNodev() throws {
        let mount = try BackgroundMount()
        defer { mount.tearDown() }
        let helper = try HelperLink(binary: mount.binary)
        defer { helper.remove() }
        let result = try runProcess(
            [
                helper.path, mount.container, mount.mountpoint, "-o",
                "state_dir=\(mount.stateDir),suid,dev,allow_remote_setuid",
            ], timeout: 60)
        #expect(result.status == 0, "\(result.output)")
        #expect(mount.isMounted, "\(result.output)")
        let options = mount.kernelOptions
        #expect(!options.isEmpty && !options.contains("nosuid") && !options.contains("nodev"), "\(options)")
    }

    @Test func anotherUserIsRefusedBeforeAnythingIsMounted() throws {
        let mount = try BackgroundMount()
        defer { mount.tearDown() }
        try posix("chmod") { chmod(mount.base, 0o777) }
        try posix("chmod") { chmod(mount.mountpoint, 0o777) }
        let refused = try runProcess(
            ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/env", "HOME=/"]
                + mount.mountCommand + ["--allow-remote-setuid"],
            timeout: 60)
        #expect(refused.status == 77, "\(refused.output)")
        #expect(
            refused.output.contains("--allow-remote-setuid") && refused.output.contains("root"), "\(refused.output)")
        #expect(!mount.isMounted)
        #expect(!pathExists(mount.stateDir), "nothing was made")
    }
}
