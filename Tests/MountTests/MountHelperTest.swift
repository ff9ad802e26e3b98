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
            + "user=root,comment=x-gvfs-show,defaults,"
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
            // No test hook is a mount option (an fstab line must not reach one).
            ("state_dir=\(mount.stateDir),test_outage_file=\(mount.base)/outage", "test_outage_file"),
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
    /// runs the helper it finds at /sbin/mount.fuse.syncfs; so that the machine's /sbin is never
    /// touched (and an installed helper never stands in for the binary under test), the scenario
    /// runs in a private mount namespace (`unshare -m`) where a tmpfs over /sbin holds only a
    /// `mount.fuse.syncfs` symlink to the built binary. The mounts live and end in that namespace.
    @Test func mountAndAnFstabLineUseTheHelper() throws {
        let mount = try BackgroundMount()
        defer { mount.tearDown() }
        let fstab = mount.base + "/fstab"
        try writeFile(
            fstab,
            "# a throwaway fstab\n\(mount.container) \(mount.mountpoint) fuse.syncfs "
                + "state_dir=\(mount.stateDir),_netdev,nofail,x-systemd.automount,noauto,ro 0 0\n")
        let script = """
            set -u
            sbin=$(readlink -f /sbin)
            mount -t tmpfs -o mode=0755 tmpfs "$sbin" || exit 90
            ln -s "$BINARY" "$sbin/mount.fuse.syncfs" || exit 91
            trap 'umount -l "$MNT" 2>/dev/null' EXIT
            daemon_gone() {
                for _ in $(seq 300); do pgrep -f -- "mount $CONTAINER $MNT " >/dev/null || return 0; sleep 0.1; done
                echo "DAEMON-STILL-RUNNING"
            }
            mount -t fuse.syncfs "$CONTAINER" "$MNT" -o "state_dir=$STATE,upload_delay=20,_netdev" && echo "TYPED-OK"
            grep " $MNT fuse.syncfs " /proc/self/mounts >/dev/null && echo "TYPED-MOUNTED"
            echo "mount(8)" >"$MNT/from-mount.txt" && echo "TYPED-WROTE"
            umount "$MNT" && echo "TYPED-UNMOUNTED"
            daemon_gone
            mount --fstab "$FSTAB" "$MNT" && echo "FSTAB-OK"
            echo "FSTAB-OPTIONS $(grep " $MNT fuse.syncfs " /proc/self/mounts | cut -d' ' -f4)"
            echo "FSTAB-READ $(cat "$MNT/from-mount.txt")"
            if touch "$MNT/new" 2>/dev/null; then echo "FSTAB-WROTE"; else echo "FSTAB-REFUSED-WRITE"; fi
            umount "$MNT" && echo "FSTAB-UNMOUNTED"
            daemon_gone
            """
        let result = try runProcess(
            ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script],
            environment: [
                "BINARY": mount.binary, "CONTAINER": mount.container, "MNT": mount.mountpoint,
                "STATE": mount.stateDir, "FSTAB": fstab,
            ], timeout: 120)
        let lines = Set(result.output.split(separator: "\n").map(String.init))
        for marker in [
            "TYPED-OK", "TYPED-MOUNTED", "TYPED-WROTE", "TYPED-UNMOUNTED", "FSTAB-OK", "FSTAB-READ mount(8)",
            "FSTAB-REFUSED-WRITE", "FSTAB-UNMOUNTED",
        ] {
            #expect(lines.contains(marker), "no \(marker):\n\(result.output)")
        }
        let options = lines.first { $0.hasPrefix("FSTAB-OPTIONS ") }?.split(separator: " ").last ?? ""
        #expect(options.split(separator: ",").contains("ro"), "the fstab line's ro: \(result.output)")
        #expect(!result.output.contains("DAEMON-STILL-RUNNING"), "\(result.output)")
        #expect(result.status == 0, "\(result.output)")
        #expect(!mount.isMounted, "a mount made in the private namespace is visible outside it")
    }
}
