import Foundation
import Glibc
import Testing

/// mount(8)'s helper convention (doc/CLI.md, "Mounting from fstab / mount(8)"): the binary
/// called as `mount.fuse.syncfs CONTAINER MOUNTPOINT [-sfnv] [-o OPTIONS] [-t fuse.syncfs]` mounts
/// in the background and returns once the folder is live; `-o` carries the `mount` options by
/// name; the options mount and systemd pass for themselves are ignored; anything else is refused
/// with exit 64 and nothing mounted.
@Suite(.serialized)
struct MountHelperTest {
    @Test func theHelperNameMountsWithMountsCallingConvention() throws {
        let mount = try BackgroundMount()
        defer { mount.tearDown() }
        let helper = try HelperLink(binary: mount.binary)
        defer { helper.remove() }
        let options =
            "rw,_netdev,x-systemd.automount,x-systemd.mount-timeout=30,noauto,nofail,nosuid,nodev,relatime,"
            + "state_dir=\(mount.stateDir),upload-delay=20,cache_size=1G,no_download_for=updatedb:baloo_file,"
            + "log_level=debug,no_inotify_echo,noexec"
        let result = try runProcess(
            [helper.path, mount.container, mount.mountpoint, "-n", "-o", options, "-t", "fuse.syncfs"], timeout: 60)
        #expect(result.status == 0, "\(result.output)")
        #expect(mount.isMounted, "the helper returned but nothing is mounted: \(result.output)")
        #expect(result.output.contains("Mounted"), "\(result.output)")
        // The options reached the daemon: its state directory is the one given, its log at debug.
        #expect(pathExists(mount.stateDir + "/state.db"), "no state in \(mount.stateDir)")
        let command =
            (mount.daemonPID().flatMap { FileManager.default.contents(atPath: "/proc/\($0)/cmdline") })
            .map { String(decoding: $0, as: UTF8.self).replacingOccurrences(of: "\0", with: " ") } ?? ""
        #expect(command.contains("--no-download-for updatedb,baloo_file"), "daemon command line: \(command)")
        #expect(command.contains("--cache-size 1G") && command.contains("--log-level debug"), "\(command)")
        #expect(command.contains("--no-inotify-echo"), "\(command)")
        let kernel = mount.kernelOptions
        #expect(kernel.contains("nosuid") && kernel.contains("nodev") && kernel.contains("noexec"), "\(kernel)")
        #expect(kernel.contains("default_permissions") && kernel.contains("allow_other"), "\(kernel)")

        try writeFile(mount.mountpoint + "/hello.txt", "through the helper")
        #expect(try readText(mount.mountpoint + "/hello.txt") == "through the helper")
        let unmounted = try mount.run(["unmount", mount.mountpoint])
        #expect(unmounted.status == 0, "\(unmounted.output)")
        #expect(!mount.isMounted)
    }

    @Test func unknownAndRefusedOptionsExit64WithNothingMounted() throws {
        let mount = try BackgroundMount()
        defer { mount.tearDown() }
        let helper = try HelperLink(binary: mount.binary)
        defer { helper.remove() }
        let cases: [(options: String, says: String)] = [
            ("state_dir=\(mount.stateDir),bogus_option", "bogus_option"),
            ("state_dir=\(mount.stateDir),cache_size=lots", "cache-size"),
            ("state_dir=\(mount.stateDir),suid", "allow_remote_setuid"),
            ("state_dir=\(mount.stateDir),foreground", "foreground"),
            ("state_dir=\(mount.stateDir),ro=yes", "takes no value"),
            // What the parser would answer instead of mounting (exit 0, nothing mounted) is refused.
            ("state_dir=\(mount.stateDir),generate_completion_script=bash", "not a mount option"),
            ("state_dir=\(mount.stateDir),experimental_dump_help", "not a mount option"),
            ("state_dir=\(mount.stateDir),help", "not a mount option"),
        ]
        for (options, says) in cases {
            let result = try runProcess([helper.path, mount.container, mount.mountpoint, "-o", options], timeout: 60)
            #expect(result.status == 64, "-o \(options): \(result.output)")
            #expect(result.output.contains(says), "-o \(options): \(result.output)")
            #expect(!mount.isMounted, "-o \(options) mounted something")
            #expect(!pathExists(mount.stateDir), "-o \(options) made a state directory")
        }
        let wrongType = try runProcess(
            [helper.path, mount.container, mount.mountpoint, "-t", "fuse.sshfs"], timeout: 60)
        #expect(wrongType.status == 64, "\(wrongType.output)")
        let oneOperand = try runProcess([helper.path, mount.container], timeout: 60)
        #expect(oneOperand.status == 64, "\(oneOperand.output)")
        // suid with allow_remote_setuid is what the flag means: accepted (checked with -f, no mount).
        let allowed = try runProcess(
            [helper.path, mount.container, mount.mountpoint, "-f", "-o", "suid,dev,allow_remote_setuid"], timeout: 60)
        #expect(allowed.status == 0, "\(allowed.output)")
        #expect(!mount.isMounted)
    }

    /// The real mount(8): `mount -t fuse.syncfs … -o …` and a line of a (throwaway) fstab. mount
    /// looks for the helper at /sbin/mount.fuse.syncfs: the test installs a symlink there to the
    /// built binary if none exists and removes it afterwards; an existing one must already point
    /// at the built binary (else the test fails: it would test another program).
    @Test func mountAndAnFstabLineUseTheHelper() throws {
        let mount = try BackgroundMount()
        defer { mount.tearDown() }
        let installed = "/sbin/mount.fuse.syncfs"
        var madeLink = false
        if let existing = try? readLink(installed) {
            guard
                realpath(existing, nil).map({ String(cString: $0) })
                    == realpath(mount.binary, nil).map({ String(cString: $0) })
            else {
                Issue.record("\(installed) exists and points at \(existing), not at the binary under test")
                return
            }
        } else {
            try makeSymlink(target: mount.binary, at: installed)
            madeLink = true
        }
        defer { if madeLink { unlink(installed) } }

        let typed = try runProcess(
            [
                "/usr/bin/mount", "-t", "fuse.syncfs", mount.container, mount.mountpoint, "-o",
                "state_dir=\(mount.stateDir),upload_delay=20,_netdev",
            ], timeout: 60)
        #expect(typed.status == 0, "\(typed.output)")
        #expect(mount.isMounted, "mount -t fuse.syncfs returned \(typed.status) but nothing is mounted")
        try writeFile(mount.mountpoint + "/from-mount.txt", "mount(8)")
        let umount = try runProcess(["/usr/bin/umount", mount.mountpoint], timeout: 60)
        #expect(umount.status == 0, "\(umount.output)")
        if let pid = mount.daemonPID() { #expect(waitForProcessGone(pid, timeout: 30)) }
        #expect(!mount.isMounted)

        let fstab = mount.base + "/fstab"
        try writeFile(
            fstab,
            "# a throwaway fstab\n\(mount.container) \(mount.mountpoint) fuse.syncfs "
                + "state_dir=\(mount.stateDir),_netdev,nofail,x-systemd.automount,noauto,ro 0 0\n")
        let fromFstab = try runProcess(["/usr/bin/mount", "--fstab", fstab, mount.mountpoint], timeout: 60)
        #expect(fromFstab.status == 0, "\(fromFstab.output)")
        #expect(mount.isMounted, "mount --fstab returned \(fromFstab.status) but nothing is mounted")
        #expect(try readText(mount.mountpoint + "/from-mount.txt") == "mount(8)")
        #expect(mount.kernelOptions.contains("ro"), "\(mount.kernelOptions)")
        expectErrno(EROFS, "creat on the ro fstab mount") { open(mount.mountpoint + "/new", O_CREAT | O_WRONLY, 0o644) }
    }
}
