import Foundation
import Glibc
import TestSupport
import Testing

@testable import SyncFS

/// `WatcherCensus`: reading `/proc`'s texts, and a real inotify watch found by a look.
struct WatcherCensusTests {
    private let fuse = WatcherCensus.MountIdentity(mountID: 0x2f1, major: 0, minor: 58)

    @Test func anInotifyMarkOnTheMountsFilesystemIsAWatcher() {
        let info = """
            pos:\t0
            flags:\t02004000
            mnt_id:\t16
            ino:\t1057
            inotify wd:1 ino:1 sdev:3a mask:fce ignored_mask:0 fhandle-bytes:8 fhandle-type:1 f_handle:0100
            """
        #expect(WatcherCensus.marks(info, reach: fuse))
        let elsewhere = info.replacingOccurrences(of: "sdev:3a", with: "sdev:fe00000")
        #expect(!WatcherCensus.marks(elsewhere, reach: fuse))
        // The descriptor's own `mnt_id:` line (the anonymous inode's mount) is not a mark.
        let ownMount = "pos:\t0\nmnt_id:\t\(0x2f1)\n"
        #expect(!WatcherCensus.marks(ownMount, reach: fuse))
    }

    @Test func theKernelsDeviceNumberSplitsTwelveBitsOfMajorAboveTwentyOfMinor() {
        let disk = WatcherCensus.MountIdentity(mountID: 1, major: 254, minor: 1)
        #expect(WatcherCensus.marks("inotify wd:2 ino:5 sdev:fe00001 mask:2", reach: disk))
        #expect(!WatcherCensus.marks("inotify wd:2 ino:5 sdev:fe01 mask:2", reach: disk))
        let bigMinor = WatcherCensus.MountIdentity(mountID: 1, major: 0, minor: 300)
        #expect(WatcherCensus.marks("inotify wd:2 ino:5 sdev:12c mask:2", reach: bigMinor))
    }

    @Test func fanotifyMarksOnTheFilesystemOrTheMountAreWatchers() {
        #expect(WatcherCensus.marks("fanotify ino:1 sdev:3a mflags:0 mask:3b ignored_mask:0", reach: fuse))
        #expect(WatcherCensus.marks("fanotify sdev:3a mflags:0 mask:3b ignored_mask:0", reach: fuse))
        #expect(WatcherCensus.marks("fanotify mnt_id:2f1 mflags:0 mask:3b ignored_mask:0", reach: fuse))
        #expect(!WatcherCensus.marks("fanotify mnt_id:2f2 mflags:0 mask:3b ignored_mask:0", reach: fuse))
        #expect(!WatcherCensus.marks("fanotify flags:0 event-flags:0", reach: fuse))
    }

    @Test func theMountIsFoundByItsEscapedPathTheTopmostWins() {
        let text = """
            22 27 0:21 / /proc rw,relatime - proc proc rw
            600 27 0:57 / /srv/my\\040folder rw,nosuid,nodev - fuse.syncfs syncfs rw,user_id=0
            601 600 0:58 / /srv/my\\040folder rw,nosuid,nodev - fuse.syncfs syncfs rw,user_id=0
            602 27 0:59 / /srv/my rw - tmpfs tmpfs rw
            """
        #expect(
            WatcherCensus.identity(of: "/srv/my folder", inMountinfo: text)
                == WatcherCensus.MountIdentity(mountID: 601, major: 0, minor: 58))
        #expect(WatcherCensus.identity(of: "/srv/other", inMountinfo: text) == nil)
    }

    /// Whether a process may enter a mount without `allow_other` (the kernel's user-ID check):
    /// another local user's process cannot, so it is not named in the log when its descriptors
    /// cannot be read; the owner's own (a non-dumpable `ssh-agent`) and an unreadable status can.
    @Test func onlyTheOwnersProcessesMayEnterWithoutAllowOther() {
        let other = "Name:\tinotifywait\nUid:\t1001\t1001\t1001\t1001\n"
        let owners = "Name:\tssh-agent\nUid:\t1000\t1000\t1000\t1000\n"
        let setuid = "Name:\tsudo\nUid:\t1000\t0\t0\t0\n"
        #expect(!WatcherCensus.mayEnter(status: other, owner: 1000))
        #expect(WatcherCensus.mayEnter(status: owners, owner: 1000))
        #expect(!WatcherCensus.mayEnter(status: setuid, owner: 1000), "the kernel checks all user IDs")
        let otherFilesystemID = "Name:\tx\nUid:\t1000\t1000\t1000\t0\n"
        #expect(WatcherCensus.mayEnter(status: otherFilesystemID, owner: 1000), "the fs user ID is not checked")
        #expect(WatcherCensus.mayEnter(status: nil, owner: 1000))
        #expect(WatcherCensus.mayEnter(status: "Name:\tx\n", owner: 1000), "no Uid line: may")
    }

    @Test func statusGivesTheFourUserIDs() {
        let status = "Name:\tssh-agent\nUmask:\t0077\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n"
        #expect(WatcherCensus.userIDs(inStatus: status) == [1000, 1000, 1000, 1000])
        #expect(WatcherCensus.userIDs(inStatus: "Name:\tx\n") == nil)
    }

    /// A real inotify watch is found on its filesystem and on no other: a tmpfs of its own, which
    /// no other process watches (as root, which can read every process's descriptors and mount).
    @Test(.enabled(if: geteuid() == 0)) func aLookFindsARealWatchOnItsFilesystemOnly() throws {
        let directory = try TemporaryDirectory()
        try #require(mount("tmpfs", directory.path, "tmpfs", 0, "size=1m") == 0, "mount tmpfs: \(errno)")
        defer { umount2(directory.path, Int32(MNT_DETACH)) }
        let mountinfo = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        let tmpfs = try #require(WatcherCensus.identity(of: directory.path, inMountinfo: mountinfo))
        var status = stat()
        try #require(stat(directory.path, &status) == 0)
        let glibcMinor = UInt32(truncatingIfNeeded: (status.st_dev & 0xFF) | ((status.st_dev >> 12) & ~0xFF))
        #expect(tmpfs.major == 0 && tmpfs.minor == glibcMinor, "a tmpfs has an anonymous device: \(tmpfs)")
        let census = WatcherCensus(mountpoint: directory.path, othersMayEnter: false)
        #expect(!census.look(at: tmpfs).watched, "nothing watches a new tmpfs yet")
        let instance = inotify_init1(Int32(IN_CLOEXEC))
        try #require(instance >= 0)
        defer { close(instance) }
        let watch = inotify_add_watch(instance, directory.path, UInt32(IN_CREATE))
        try #require(watch >= 0)
        #expect(census.look(at: tmpfs).watched)
        #expect(census.look().watched, "found through /proc/self/mountinfo too")
        #expect(inotify_rm_watch(instance, watch) == 0)
        #expect(!census.look(at: tmpfs).watched, "the watch is gone")
    }
}
