import Foundation
import Glibc
import Synchronization

/// The cross-process push of a local container: "something was committed".
///
/// After every commit, the committing process writes one byte to `changes.signal` (`post()`).
/// Every process following the container watches that file with its own inotify instance, on a
/// dedicated thread blocked in `poll()` (no busy polling); an event wakes the process's waiters
/// through `notifier`, and they re-read the version counter. The byte's value means nothing.
///
/// The signal is a hint, never the truth: a waiter always re-checks the database, and also every
/// `LocalContainer.safetyRecheck` in case an event is missed (the file replaced, inotify
/// unavailable, a filesystem that does not report other writers).
final class LocalChangeSignal: Sendable {
    /// Woken on every event of the watched file and on every `post()` of this process.
    let notifier = ChangeNotifier()
    /// True while an inotify watch is in place on a filesystem that reports every writer's
    /// changes (not NFS, SMB, 9p, FUSE…): then a missed event is not expected and waiters may
    /// re-check rarely (`LocalContainer.recheckInterval`).
    var isReliable: Bool { watching.value.load(ordering: .relaxed) && reportsOtherWriters }
    /// Shared with the watcher thread (a box: the thread must not keep this instance alive).
    private let watching = WatchFlag()
    private let reportsOtherWriters: Bool
    private let path: String
    /// The write end of the socket that stops the watcher thread, once started.
    private let stopWriter = Mutex<Int32?>(nil)

    init(path: String) {
        self.path = path
        reportsOtherWriters = Self.reportsOtherWriters(directoryOf: path)
    }

    /// Whether inotify on this filesystem sees other processes' (and machines') writes: false for
    /// network and FUSE filesystems, where only this kernel's own writes raise events, and when
    /// the filesystem cannot be told (then waiters keep re-checking every second).
    private static func reportsOtherWriters(directoryOf path: String) -> Bool {
        guard let type = MountTable.filesystemType(containing: path) else { return false }
        let remote = [
            "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "afs", "glusterfs", "lustre", "gfs2", "ocfs2",
        ]
        return !remote.contains(type) && type != "fuse" && !type.hasPrefix("fuse.") && type != "fuseblk"
    }

    deinit { stop() }

    /// Tells every follower (other processes through inotify, this one directly) that a commit
    /// happened. Failures are ignored: followers fall back to their periodic re-check.
    func post() {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if fd >= 0 {
            var byte: UInt8 = 1
            _ = pwrite(fd, &byte, 1, 0)
            close(fd)
        }
        notifier.notify()
    }

    /// Starts watching if this instance is not watching yet. The watch is in place when this
    /// returns, so a commit made after it is never missed; the thread only waits for its events.
    func startWatching() {
        stopWriter.withLock { writer in
            guard writer == nil else { return }
            var ends: [Int32] = [-1, -1]
            // A socket pair rather than a pipe: it can be made close-on-exec atomically.
            let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            guard socketpair(AF_UNIX, type, 0, &ends) == 0 else { return }
            writer = ends[1]
            // Without inotify (-1), waiters still re-check every `LocalContainer.safetyRecheck`.
            let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
            let watch = inotify >= 0 ? inotify_add_watch(inotify, path, Self.watchMask) : -1
            let (path, reader, notifier, watching) = (path, ends[0], notifier, watching)
            watching.value.store(watch >= 0, ordering: .relaxed)
            // Stopped through the socket (`stop()`, also from deinit, so never joined here).
            Worker.start("syncfs-container-signal") { _ in
                Self.watch(
                    path: path, inotify: inotify, watch: watch, stopReader: reader, notifier: notifier,
                    watching: watching)
            }
        }
    }

    /// Stops the watcher thread (it closes its own descriptors).
    func stop() {
        stopWriter.withLock { writer in
            guard let fd = writer else { return }
            var byte: UInt8 = 0
            _ = write(fd, &byte, 1)
            close(fd)
            writer = nil
        }
    }

    private static let watchMask = UInt32(IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

    /// The watcher thread: blocks in `poll()` on the inotify descriptor and the stop socket.
    private static func watch(
        path: String, inotify: Int32, watch: Int32, stopReader: Int32, notifier: ChangeNotifier,
        watching: WatchFlag
    ) {
        defer {
            watching.value.store(false, ordering: .relaxed)
            if inotify >= 0 { close(inotify) }
            close(stopReader)
        }
        var watch = watch
        while true {
            if inotify >= 0, watch < 0 {
                watch = inotify_add_watch(inotify, path, watchMask)
                // Events between losing the watch and now were missed: waiters look again.
                if watch >= 0 { notifier.notify() }
            }
            watching.value.store(watch >= 0, ordering: .relaxed)
            var fds = [pollfd(fd: stopReader, events: Int16(POLLIN), revents: 0)]
            if inotify >= 0 { fds.append(pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)) }
            // Without a watch (the file is gone for now), retry adding it every second.
            let result = poll(&fds, nfds_t(fds.count), watch < 0 ? 1_000 : -1)
            if result < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[0].revents != 0 { return }
            if fds.count > 1, fds[1].revents != 0 {
                if drain(inotify, watch: watch) { watch = -1 }
                notifier.notify()
            }
        }
    }

    /// Reads every pending event; true if the watch is gone (the file was deleted or moved).
    private static func drain(_ inotify: Int32, watch: Int32) -> Bool {
        var lost = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            guard count > 0 else { return lost }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.withUnsafeBytes {
                    $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                }
                if event.mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) != 0 {
                    if event.mask & UInt32(IN_MOVE_SELF) != 0 { inotify_rm_watch(inotify, watch) }
                    lost = true
                }
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
    }
}

/// Whether the watcher thread has its inotify watch in place.
private final class WatchFlag: Sendable {
    let value = Atomic<Bool>(false)
}
