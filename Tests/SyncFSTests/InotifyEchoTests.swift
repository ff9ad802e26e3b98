import Foundation
import Glibc
import SyncBackend
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// The inotify echo's robustness without FUSE: a stuck step never holds a caller past its
/// timeout, and remote changes the echo cannot carry are applied directly. (Through a real mount:
/// `EventsTest` in the mount tests.)
@Suite("InotifyEcho: robustness", .serialized)
struct InotifyEchoTests {
    /// The echo thread's own descriptor table keeps no copy of what the daemon had open: a
    /// connection the daemon closes ends for its peer even while the echo thread lives (a loaded
    /// clean-clone run: control clients the daemon had closed never saw the end, because the echo
    /// thread had copied them when it isolated itself after they were accepted).
    @Test func anIsolatedThreadHoldsNoCopyOfTheProcesssDescriptors() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let isolated = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        let succeeded = Atomic<Bool>(false)
        let thread = Thread {
            succeeded.store(FuseSession.isolateCallingThread(), ordering: .relaxed)
            isolated.signal()
            finish.wait()  // alive, with its own table, while the main thread checks
        }
        thread.start()
        isolated.wait()
        defer { finish.signal() }
        let didIsolate = succeeded.load(ordering: .relaxed)
        #expect(didIsolate)
        close(ends[1])
        var descriptor = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, 2000)
        var byte: UInt8 = 0
        let count = ready == 1 ? read(ends[0], &byte, 1) : -2
        #expect(count == 0, "end of file: the isolated thread holds no copy of the write end (read \(count))")
    }

    @Test func aStuckStepTimesOutAndLaterStepsSkipTheEchoUntilItReturns() throws {
        let tid = Atomic<Int32>(0)
        let echo = InotifyEcho(mountpoint: "/nonexistent", timeout: 0.2) { tid.store($0, ordering: .relaxed) }
        defer { echo.stop() }
        #expect(echo.run { 7 } == 7)
        #expect(tid.load(ordering: .relaxed) > 0)
        #expect(tid.load(ordering: .relaxed) != InotifyEcho.currentThreadID(), "its own thread")
        var start = Date()
        #expect(
            echo.run {
                usleep(1_000_000)  // scenario: a step stuck past the echo's timeout
                return 0
            } == nil)
        #expect(Date().timeIntervalSince(start) < 0.9, "the caller waited only its timeout")
        #expect(!echo.isAvailable)
        start = Date()
        #expect(echo.run { 0 } == nil, "busy: skipped at once")
        #expect(Date().timeIntervalSince(start) < 0.15)
        #expect(waitUntil(timeout: 5) { echo.isAvailable })
        #expect(echo.run { 3 } == 3)
        #expect(echo.timedOutSteps == 1 && echo.completedSteps == 2)
    }

    /// The content touch's `truncate(path, same size)` is carried out by the kernel: it cuts its
    /// page cache to the size the daemon answers. A program that opened the file after the remote
    /// change may hold written pages the daemon has not received yet (writeback cache), which the
    /// cut would drop without an error: the touch's truncate is refused while the file is open for
    /// writing, and once its size changed; a chmod touch (no size) always goes through.
    @Test func theTouchsTruncateIsRefusedWhileAWriteMayBeInThePageCache() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("one\n"))
        let echoed = EchoCall(requests: fixture.fs.echo)
        #expect(try echoed.setattr(ino, size: 4).size == 4)
        let handle = try fixture.fs.open(ino, flags: O_WRONLY | O_APPEND, caller: testCaller)
        #expect(throws: FSError.io(EBUSY)) { try echoed.setattr(ino, size: 4) }
        #expect(try echoed.setattr(ino, size: nil).size == 4)
        try fixture.write(handle, bytes("two\n"), at: 4)
        fixture.fs.fileIO.release(handle)
        #expect(throws: FSError.io(EBUSY), "written and closed since the touch was planned") {
            try echoed.setattr(ino, size: 4)
        }
        #expect(try echoed.setattr(ino, size: 8).size == 8)
        #expect(fixture.cacheContents(of: ino) == bytes("one\ntwo\n"))
    }

    /// An entry invalidation takes the directory's lock in the kernel, which a call of the echo
    /// thread may hold while it waits for the daemon's answer; sent then, the notifying thread
    /// waited in the kernel, and a daemon killed meanwhile could never exit (seen under load).
    /// Entry invalidations now wait for the echo's call in user space; attribute and content ones
    /// go at once.
    @Test func entryInvalidationsWaitForTheEchosCallOutsideTheKernel() throws {
        let fixture = try FileSystemFixture()
        let log = InvalidationLog()
        fixture.fs.setInvalidator(log)
        fixture.fs.echo.channel.start(mountpoint: "/nonexistent", timeout: 0.05)
        defer { fixture.fs.echo.channel.stop() }
        #expect(waitUntil(timeout: 5) { fixture.fs.echo.channel.current?.isAvailable == true })
        let release = DispatchSemaphore(value: 0)
        // A step stuck in the kernel: the caller's wait ends (timeout), the step goes on.
        #expect(
            fixture.fs.echo.channel.current?.run {
                release.wait()
                return 0
            } == nil)
        #expect(fixture.fs.echo.channel.stepInKernel)
        fixture.fs.live.perform([.attributes(InodeNumber(7))])
        #expect(log.inodes == [InodeNumber(7)], "attributes go at once")
        let sent = SharedFlag()
        let tree = Unchecked(fixture.fs.live)
        Thread {
            tree.value.perform([.entry(parent: .root, name: FileName("x")), .attributes(InodeNumber(8))])
            sent.set(true)
        }.start()
        usleep(200_000)  // scenario: time for an invalidation that must wait
        #expect(!sent.isSet, "an entry invalidation waits while the echo's call is in the kernel")
        #expect(log.inodes == [InodeNumber(7)])
        release.signal()
        #expect(waitUntil(timeout: 5) { sent.isSet })
        #expect(log.inodes == [InodeNumber(7), InodeNumber(8)])
    }

    /// The adapter passes the echo thread's requests through like any other: Core tells them
    /// apart by the caller's thread id. Without a pending remote change, a structural request of
    /// the echo thread changes nothing (EAGAIN: the kernel keeps its view); its setattr answers
    /// without changing anything; its open of a file counts as neither open nor writing. The
    /// same calls from anybody else change the tree.
    @Test func theEchoThreadsRequestsAreToldApartInCore() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("one\n"))
        fixture.fs.echo.channel.start(mountpoint: "/nonexistent")
        defer { fixture.fs.echo.channel.stop() }
        #expect(waitUntil(timeout: 5) { fixture.fs.echo.channel.echoThreadID != 0 })
        let echo = Caller(uid: 0, gid: 0, pid: fixture.fs.echo.channel.echoThreadID)
        #expect(throws: FSError.io(EAGAIN)) { try fixture.fs.unlink(parent: .root, name: FileName("f"), caller: echo) }
        #expect(throws: FSError.io(EAGAIN)) {
            try fixture.fs.mkdir(parent: .root, name: FileName("d"), mode: 0o755, caller: echo)
        }
        var chmod = AttributeChanges()
        chmod.mode = 0o600
        #expect(try fixture.fs.setattr(ino, chmod, handle: nil, caller: echo).mode & 0o777 == 0o644)
        let handle = try fixture.fs.open(ino, flags: O_WRONLY, caller: echo)
        #expect(fixture.fs.live.transact { _ in handle.node.openCount == 0 && handle.node.openWriters == 0 })
        fixture.fs.fileIO.release(handle)
        #expect(try fixture.childNames() == ["f"])
        #expect(try fixture.fs.setattr(ino, chmod, handle: nil, caller: testCaller).mode & 0o777 == 0o600)
        try fixture.fs.unlink(parent: .root, name: FileName("f"), caller: testCaller)
        #expect(try fixture.childNames().isEmpty)
    }

    @Test func remoteChangesTheEchoCannotCarryAreAppliedDirectly() async throws {
        let pair = try SyncedPair()
        // No mount answers there: every echo call fails at once, and B applies directly.
        pair.b.fs.echo.channel.start(mountpoint: "/nonexistent/syncfs-echo", timeout: 1)
        defer { pair.b.fs.echo.channel.stop() }
        let subscription = pair.b.fs.changeEvents.subscribe(.everything)
        let dir = try pair.a.mkdir("d")
        let ino = try pair.a.makeFile("f", in: dir, contents: bytes("v1"))
        // Names only: reading a placeholder here would block a cooperative thread on a download.
        try await eventually("f on B") { try pair.b.childNames(of: pair.b.lookupIno("d")) == ["f"] }
        try pair.a.fs.rename(parent: dir, name: FileName("f"), newParent: .root, newName: FileName("g"), flags: [])
        try await eventually("g on B") { try pair.b.childNames() == ["d", "g"] }
        try pair.a.fs.unlink(parent: .root, name: FileName("g"))
        try await eventually("g gone on B") { try pair.b.childNames() == ["d"] }
        var kinds: [String] = []
        while case .event(let event) = subscription.next(timeout: 0) {
            if event.isMountLevel { continue }  // the sync rounds' events are not changes
            kinds.append("\(event.kind) \(event.path)" + (event.oldPath.map { " <- \($0)" } ?? ""))
        }
        #expect(kinds == ["created d", "created d/f", "renamed g <- d/f", "deleted g"])
        #expect(pair.b.fs.outbox.items.isEmpty)
        #expect((pair.b.fs.echo.channel.statistics?.completed ?? 0) >= 4, "the echo was tried")
        _ = ino
    }

    @Test func requestsFromOtherThreadsAreNeverTakenForTheEcho() throws {
        let fixture = try FileSystemFixture()
        let channel = fixture.fs.echo.channel
        #expect(!channel.isEchoRequest(pid: 0))
        #expect(!channel.isEchoRequest(pid: getpid()))
        #expect(fixture.fs.echo.request(from: testCaller) == nil)
        channel.start(mountpoint: "/nonexistent")
        defer { channel.stop() }
        #expect(waitUntil(timeout: 5) { channel.echoThreadID != 0 })
        #expect(!channel.isEchoRequest(pid: 0) && !channel.isEchoRequest(pid: getpid()))
        #expect(channel.isEchoRequest(pid: channel.echoThreadID))
        #expect(fixture.fs.echo.request(from: testCaller) == nil)
        #expect(fixture.fs.echo.request(from: Caller(uid: 0, gid: 0, pid: channel.echoThreadID)) != nil)
    }
}
