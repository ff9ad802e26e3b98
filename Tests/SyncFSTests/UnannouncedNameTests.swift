import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// A remote change that gives a name to another entry reaches the kernel as an invalidation sent
/// after the tree changed; until it arrives, the kernel still resolves the name to the node it
/// led to before. A program that read that node and renames or deletes it by name must not move
/// or delete the entry that took the name meanwhile (`UnannouncedNames`): the call answers
/// `ESTALE` (the kernel looks the name up again and retries), and acts on the new entry only once
/// the kernel was told or looked the name up. Without FUSE: a fake kernel that holds the
/// invalidation.
@Suite("Names the kernel was not told of yet", .serialized)
struct UnannouncedNameTests {
    @Test func aNameTakenByARemoteEntryIsNotRenamedOrDeletedBeforeTheKernelKnows() async throws {
        let held = UploadQueue.Policy(
            quietDelay: 60_000_000_000, initialBackoff: 20_000_000, maximumBackoff: 200_000_000)
        let pair = try SyncedPair(policy: held)
        let kernel = HoldingKernel()
        pair.b.fs.setInvalidator(kernel)
        // B's own file, not uploaded yet, holds the name when A's arrives.
        let local = try pair.b.makeFile("f1.txt", contents: bytes("H\n"))
        try pair.a.makeFile("f1.txt", contents: bytes("F1\nF2\nF3\n"))
        pair.a.fs.outbox.expediteAll()
        try await eventually("B applied A's file and is telling the kernel") {
            kernel.heldNames.contains(FileName("f1.txt"))
        }
        let remote = try #require(
            pair.b.fs.live.transact { tree in tree.child(of: try tree.directory(.root), named: FileName("f1.txt")) })
        try #require(remote.ino != local, "A's file took the name; B's moved aside")
        // A program that read B's file renames it aside by the name it knows, then (its check
        // passing in the kernel's view, where the name still leads to B's file) deletes it.
        #expect(throws: FSError.stale) {
            try pair.b.fs.rename(
                parent: .root, name: FileName("f1.txt"), newParent: .root, newName: FileName(".delete-B"),
                flags: .noReplace, caller: testCaller)
            try pair.b.fs.unlink(parent: .root, name: FileName(".delete-B"))
        }
        #expect(throws: FSError.stale) { try pair.b.fs.unlink(parent: .root, name: FileName("f1.txt")) }
        #expect(throws: FSError.stale) {
            try pair.b.fs.rename(
                parent: .root, name: FileName("other"), newParent: .root, newName: FileName("f1.txt"), flags: [],
                caller: testCaller)
        }
        kernel.release()
        try await eventually("the kernel was told") {
            pair.b.fs.live.transact { $0.unannouncedNames.isEmpty }
        }
        // Told, the kernel resolves the name to A's file: a rename by the name moves that one.
        try pair.b.fs.rename(
            parent: .root, name: FileName("f1.txt"), newParent: .root, newName: FileName("moved.txt"),
            flags: .noReplace,
            caller: testCaller)
        #expect(try pair.b.lookupIno("moved.txt") == remote.ino)
        pair.b.fs.outbox.expediteAll()
        pair.a.fs.outbox.expediteAll()
        try await pair.settle()
        try await eventually("both files on both sides") {
            for side in [pair.a, pair.b] {
                let texts = Set(try side.childNames().map { try contents(side, $0) })
                guard texts == [bytes("H\n"), bytes("F1\nF2\nF3\n")] else { return false }
            }
            return true
        }
    }

    /// The kernel's own lookup after the change learns the new binding: the name acts again even
    /// while the invalidation is still on its way.
    @Test func aLookupAfterTheChangeLetsTheNameActAgain() async throws {
        let fixture = try FileSystemFixture()
        let kernel = HoldingKernel()
        fixture.fs.setInvalidator(kernel)
        try fixture.makeFile("x", contents: bytes("x"))
        let live = Unchecked(fixture.fs.live)
        let sent = SharedFlag()
        Thread {
            live.value.transact { tree in tree.invalidate(.entry(parent: .root, name: FileName("x"))) }
            sent.set(true)
        }.start()
        defer { kernel.release() }
        #expect(waitUntil(timeout: 5) { kernel.heldNames == [FileName("x")] })
        #expect(throws: FSError.stale) { try fixture.fs.unlink(parent: .root, name: FileName("x")) }
        _ = try fixture.lookupIno("x")
        try fixture.fs.unlink(parent: .root, name: FileName("x"))
        #expect(throws: FSError.notFound) { try fixture.lookupIno("x") }
        kernel.release()
        #expect(waitUntil(timeout: 5) { sent.isSet })
        // Without a kernel to tell, nothing stays marked.
        let bare = try FileSystemFixture()
        try bare.makeFile("y")
        bare.fs.live.transact { tree in tree.invalidate(.entry(parent: .root, name: FileName("y"))) }
        try bare.fs.unlink(parent: .root, name: FileName("y"))
    }
}

/// A kernel that holds entry invalidations until `release`, as a busy kernel (or one waiting for
/// the echo's call) delays them.
private final class HoldingKernel: KernelCacheInvalidating, @unchecked Sendable {
    private let condition = NSCondition()
    private var held = true
    private var names: [FileName] = []

    var heldNames: [FileName] {
        condition.lock()
        defer { condition.unlock() }
        return names
    }

    func entryChanged(parent: InodeNumber, name: FileName) {
        condition.lock()
        defer { condition.unlock() }
        names.append(name)
        while held { condition.wait() }
    }

    func release() {
        condition.lock()
        held = false
        condition.broadcast()
        condition.unlock()
    }

    func attributesChanged(_ ino: InodeNumber) {}
    func writeBackPages(_ ino: InodeNumber) {}
}
