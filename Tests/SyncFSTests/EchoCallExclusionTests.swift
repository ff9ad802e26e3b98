import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// The echo thread's calls on the mount and the daemon's entry invalidations are never in the
/// kernel together (`EchoCallExclusion`): a call holds its directory's lock while it waits for
/// the daemon's answer, an entry invalidation takes that lock, and once the session's loop has
/// ended the answer never comes — a daemon whose shutdown waited forever for its follower (its
/// thread in `fuse_reverse_inval_entry`, the echo thread in `request_wait_answer`). Without
/// FUSE: a fake kernel that blocks as the real one does.
@Suite("Echo calls and entry invalidations", .serialized)
struct EchoCallExclusionTests {
    /// The session ends while the echo thread's call waits in the kernel for an answer that will
    /// not come; the follower's entry invalidation for that directory must not be written then
    /// (it would wait for the call's lock forever): it is dropped, attributes still go.
    @Test func anEntryInvalidationIsDroppedWhenTheEchoStopsWithItsCallStuckInTheKernel() throws {
        let fixture = try FileSystemFixture()
        let kernel = DirectoryLockingKernel()
        fixture.fs.setInvalidator(kernel)
        let channel = fixture.fs.echo.channel
        channel.start(mountpoint: "/nonexistent", timeout: 0.05)
        defer { channel.stop() }
        #expect(waitUntil(timeout: 5) { channel.current?.isAvailable == true })
        let answer = DispatchSemaphore(value: 0)
        defer { answer.signal() }  // lets a wrongly written invalidation out of the fake kernel
        // The echo's mknod, read by a worker of a session that then ended: never answered.
        #expect(channel.current?.run { kernel.call { answer.wait() } } == nil, "the caller's wait timed out")
        #expect(waitUntil(timeout: 5) { kernel.callsInKernel == 1 })
        let returned = SharedFlag()
        let live = Unchecked(fixture.fs.live)
        Thread {
            live.value.perform([.entry(parent: .root, name: FileName("x")), .attributes(InodeNumber(8))])
            returned.set(true)
        }.start()
        channel.stop()  // the daemon's shutdown, once the session's loop returned
        #expect(waitUntil(timeout: 5) { returned.isSet }, "the follower's invalidation did not wait in the kernel")
        #expect(kernel.entriesWrittenDuringACall == 0)
        #expect(kernel.entries.isEmpty, "dropped: the mount is going away")
        #expect(kernel.attributes == [InodeNumber(8)])
    }

    /// The follower's look at the echo and its write of the invalidation are one step: an echo
    /// call never enters the kernel between them (it would take the directory's lock the
    /// invalidation then waits for). Here the invalidation dwells between the two inside the fake
    /// kernel while the echo is handed a step: the step's call waits until the invalidation is
    /// out.
    @Test func anEchoCallNeverEntersTheKernelWhileAnEntryInvalidationIsBeingWritten() throws {
        let fixture = try FileSystemFixture()
        let kernel = DirectoryLockingKernel()
        fixture.fs.setInvalidator(kernel)
        let channel = fixture.fs.echo.channel
        channel.start(mountpoint: "/nonexistent", timeout: 0.05)
        defer { channel.stop() }
        #expect(waitUntil(timeout: 5) { channel.current?.isAvailable == true })
        kernel.holdEntryInvalidations()
        let sent = SharedFlag()
        let live = Unchecked(fixture.fs.live)
        Thread {
            live.value.perform([.entry(parent: .root, name: FileName("x"))])
            sent.set(true)
        }.start()
        #expect(waitUntil(timeout: 5) { kernel.entriesInKernel == 1 })
        let called = SharedFlag()
        _ = channel.current?.run {
            defer { called.set(true) }
            return kernel.call {}
        }
        kernel.releaseEntryInvalidations()
        #expect(waitUntil(timeout: 5) { sent.isSet && called.isSet })
        #expect(kernel.callsThatMetAnEntryInvalidation == 0, "the call waited outside the kernel")
        #expect(kernel.entries == [FileName("x")])
    }
}

/// Invalidations as the kernel carries them out, for one directory: an entry invalidation takes
/// the directory's lock, which a call on the mount (`call`) holds until the daemon answered it.
/// `holdEntryInvalidations` keeps entry invalidations inside, before they take the lock.
private final class DirectoryLockingKernel: KernelCacheInvalidating, @unchecked Sendable {
    private let condition = NSCondition()
    private var held = false
    private var lockHolders = 0
    private var writing = 0
    private var metInvalidation = 0
    private var writtenDuringCall = 0
    private var entryNames: [FileName] = []
    private var attributeInodes: [InodeNumber] = []

    /// A call on the mount: holds the directory's lock until `waitForAnswer` returns. Returns 0.
    @discardableResult
    func call(_ waitForAnswer: () -> Void) -> Int32 {
        locked {
            if writing > 0 { metInvalidation += 1 }
            lockHolders += 1
        }
        waitForAnswer()
        locked { lockHolders -= 1 }
        return 0
    }

    func entryChanged(parent: InodeNumber, name: FileName) {
        condition.lock()
        defer { condition.unlock() }
        writing += 1
        condition.broadcast()
        if lockHolders > 0 { writtenDuringCall += 1 }
        while held || lockHolders > 0 { condition.wait() }
        entryNames.append(name)
        writing -= 1
        condition.broadcast()
    }

    func attributesChanged(_ ino: InodeNumber) { locked { attributeInodes.append(ino) } }
    func writeBackPages(_ ino: InodeNumber) {}

    func holdEntryInvalidations() { locked { held = true } }
    func releaseEntryInvalidations() { locked { held = false } }

    var callsInKernel: Int { locked { lockHolders } }
    var entriesInKernel: Int { locked { writing } }
    var callsThatMetAnEntryInvalidation: Int { locked { metInvalidation } }
    var entriesWrittenDuringACall: Int { locked { writtenDuringCall } }
    var entries: [FileName] { locked { entryNames } }
    var attributes: [InodeNumber] { locked { attributeInodes } }

    private func locked<Value>(_ body: () -> Value) -> Value {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body()
    }
}
