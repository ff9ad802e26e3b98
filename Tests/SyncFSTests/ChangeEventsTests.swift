import Foundation
import Glibc
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// A subscription's events so far (it is drained without waiting).
private func drain(_ subscription: ChangeSubscription) -> [ChangeEvent] {
    var events: [ChangeEvent] = []
    while case .event(let event) = subscription.next(timeout: 0) { events.append(event) }
    return events
}

/// `kind path` (and `<- oldPath`) per event, for readable expectations.
private func summary(_ events: [ChangeEvent]) -> [String] {
    events.map { "\($0.kind.rawValue) \($0.path)" + ($0.oldPath.map { " <- \($0)" } ?? "") }
}

private func event(_ kind: ChangeEvent.Kind, _ path: String, oldPath: String? = nil) -> ChangeEvent {
    ChangeEvent(kind: kind, path: path, oldPath: oldPath, origin: .local, fileID: .root, type: .file)
}

@Suite("ChangeEvents: the hub")
struct ChangeEventsHubTests {
    @Test func nobodyObservesUntilSomebodySubscribesAndAfterTheyCancel() {
        let hub = ChangeEvents()
        #expect(!hub.isObserved)
        let subscription = hub.subscribe(.everything)
        #expect(hub.isObserved)
        hub.publish(event(.created, "a"))
        subscription.cancel()
        #expect(!hub.isObserved)
        hub.publish(event(.created, "b"))
        #expect(summary(drain(subscription)) == ["created a"], "queued events are still taken after cancel")
        #expect(subscription.next(timeout: 0) == .closed)
    }

    @Test func requestPathsBecomeFilters() {
        #expect(ChangeFilter(requestPath: nil) == .everything)
        #expect(ChangeFilter(requestPath: "") == .everything)
        #expect(ChangeFilter(requestPath: "/") == .everything)
        #expect(ChangeFilter(requestPath: "dir/") == .below("dir"))
        #expect(ChangeFilter(requestPath: "/dir/sub/") == .below("dir/sub"))
        #expect(ChangeFilter(requestPath: "./dir/file") == .entry("dir/file"))
    }

    @Test func anEntryFilterMatchesItsPathOrOldPathExactly() {
        let hub = ChangeEvents()
        let subscription = hub.subscribe(ChangeFilter(requestPath: "dir/f"))
        for published in [
            event(.modified, "dir/f"), event(.modified, "dir/f2"), event(.modified, "dir"),
            event(.modified, "dir/f/x"), event(.renamed, "g", oldPath: "dir/f"), event(.renamed, "dir/f", oldPath: "h"),
        ] {
            hub.publish(published)
        }
        #expect(summary(drain(subscription)) == ["modified dir/f", "renamed g <- dir/f", "renamed dir/f <- h"])
    }

    @Test func aFolderFilterMatchesTheFolderAndEverythingBelowItAndMovesInAndOut() {
        let hub = ChangeEvents()
        let subscription = hub.subscribe(ChangeFilter(requestPath: "dir/"))
        let everything = hub.subscribe(.everything)
        let published = [
            event(.created, "dir"), event(.created, "dir/a"), event(.created, "dir/sub/b"), event(.created, "dirx"),
            event(.created, "dirx/c"), event(.created, "other/dir"), event(.renamed, "out", oldPath: "dir/a"),
            event(.renamed, "dir/in", oldPath: "elsewhere"),
        ]
        for item in published { hub.publish(item) }
        #expect(
            summary(drain(subscription)) == [
                "created dir", "created dir/a", "created dir/sub/b", "renamed out <- dir/a",
                "renamed dir/in <- elsewhere",
            ])
        #expect(drain(everything).count == published.count)
    }

    @Test func aSubscriberTooFarBehindGetsOneOverflowAndNothingMore() {
        let hub = ChangeEvents()
        let slow = hub.subscribe(.everything, limit: 3)
        let fast = hub.subscribe(.everything, limit: 100)
        for index in 0..<5 { hub.publish(event(.created, "f\(index)")) }
        let taken = (0..<4).map { _ in slow.next(timeout: 0) }
        #expect(taken.prefix(3).map { if case .event(let e) = $0 { e.path } else { "-" } } == ["f0", "f1", "f2"])
        #expect(taken.last == .overflow)
        hub.publish(event(.created, "later"))
        #expect(slow.next(timeout: 0) == .closed)
        #expect(drain(fast).count == 6, "another subscriber loses nothing")
    }

    @Test func nextWaitsForAnEventOrItsTimeout() {
        let hub = ChangeEvents()
        let subscription = hub.subscribe(.everything)
        let start = Date()
        #expect(subscription.next(timeout: 0.2) == .timedOut)
        #expect(Date().timeIntervalSince(start) >= 0.19)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { hub.publish(event(.deleted, "x")) }
        let received = subscription.next(timeout: 5)
        guard case .event(let delivered) = received else {
            Issue.record("expected an event, got \(received)")
            return
        }
        #expect(delivered.kind == .deleted && delivered.path == "x")
        hub.closeAll()
        #expect(subscription.next(timeout: 5) == .closed)
        #expect(!hub.isObserved)
    }

    @Test func aLineOfJSONHasItsKeysInOrderAndEscapesNames() throws {
        let line = ChangeEvent(
            kind: .renamed, path: "a \"quoted\"\nname\\", oldPath: "tab\there", origin: .remote,
            fileID: FileID(hex: "0123456789abcdef0123456789abcdef"), type: .directory,
            time: "2026-11-21T15:45:02.123Z"
        ).jsonLine
        #expect(
            String(decoding: line, as: UTF8.self)
                == #"{"time":"2026-11-21T15:45:02.123Z","kind":"renamed","path":"a \"quoted\"\nname\\","#
                + #""oldPath":"tab\there","origin":"remote","fileID":"0123456789abcdef0123456789abcdef","#
                + #""type":"directory"}"# + "\n")
        let decoded = try JSONDecoder().decode(ChangeEvent.self, from: Data(line))
        #expect(decoded.path == "a \"quoted\"\nname\\" && decoded.oldPath == "tab\there")
        #expect(String(decoding: ChangeEvent.overflow().jsonLine, as: UTF8.self).contains(#""kind":"overflow"}"#))
    }

    @Test func timestampsAreUTCWithMilliseconds() {
        #expect(ChangeEvent.timestamp(nanoseconds: 1_763_739_902_123_456_789) == "2025-11-21T15:45:02.123Z")
        #expect(ChangeEvent.timestamp(nanoseconds: 0) == "1970-01-01T00:00:00.000Z")
    }
}

@Suite("ChangeEvents: what each local operation publishes")
struct LocalChangeEventsTests {
    @Test func createWriteCloseIsCreatedThenModifiedOnce() throws {
        let fixture = try FileSystemFixture()
        let subscription = fixture.fs.changeEvents.subscribe(.everything)
        let (reply, handle) = try fixture.fs.opener.create(
            parent: .root, name: FileName("f"), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        for index in 0..<10 { try fixture.write(handle, bytes("x"), at: Int64(index)) }
        #expect(summary(drain(subscription)) == ["created f"], "writes alone publish nothing")
        fixture.fs.fileIO.release(handle)
        let events = drain(subscription)
        #expect(summary(events) == ["modified f"])
        #expect(events.first?.origin == .local && events.first?.type == .file)
        #expect(events.first?.fileID == fixture.fileID(of: reply.attributes.ino)?.hex)
    }

    @Test func theModifiedOfABurstComesWhenTheLastWriterClosesOrOnFsync() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("v1"))
        let subscription = fixture.fs.changeEvents.subscribe(.entry("f"))
        let first = try fixture.fs.open(ino, flags: O_WRONLY, caller: testCaller)
        let second = try fixture.fs.open(ino, flags: O_WRONLY, caller: testCaller)
        try fixture.write(first, bytes("a"), at: 0)
        try fixture.write(second, bytes("b"), at: 1)
        fixture.fs.fileIO.release(first)
        #expect(drain(subscription).isEmpty, "another writer still has it open")
        try fixture.fs.fileIO.fsync(second, dataOnly: false)
        #expect(summary(drain(subscription)) == ["modified f"])
        fixture.fs.fileIO.release(second)
        #expect(drain(subscription).isEmpty, "nothing written since the fsync")
        let reader = try fixture.fs.open(ino, flags: O_RDONLY, caller: testCaller)
        fixture.fs.fileIO.release(reader)
        #expect(drain(subscription).isEmpty, "a reader changes nothing")
    }

    @Test func namesDirectoriesAndSymlinks() throws {
        let fixture = try FileSystemFixture()
        let subscription = fixture.fs.changeEvents.subscribe(.everything)
        let dir = try fixture.mkdir("d")
        _ = try fixture.fs.symlink(target: bytes("d"), parent: .root, name: FileName("link"), caller: testCaller)
        _ = try fixture.fs.mknod(parent: dir, name: FileName("n"), mode: UInt32(S_IFREG) | 0o600, caller: testCaller)
        let before = drain(subscription)
        #expect(summary(before) == ["created d", "created link", "created d/n"])
        #expect(before.map(\.type) == [.directory, .symlink, .file])
        try fixture.fs.rename(parent: dir, name: FileName("n"), newParent: .root, newName: FileName("m"), flags: [])
        try fixture.fs.unlink(parent: .root, name: FileName("link"))
        try fixture.fs.rmdir(parent: .root, name: FileName("d"))
        let after = drain(subscription)
        #expect(summary(after) == ["renamed m <- d/n", "deleted link", "deleted d"])
        #expect(after[0].fileID == before[2].fileID, "a rename keeps the file ID")
    }

    @Test func anExchangeIsTwoRenamesAndSaveByRenameIsOneRename() throws {
        let fixture = try FileSystemFixture()
        try fixture.makeFile("a", contents: bytes("a"))
        try fixture.makeFile("b", contents: bytes("b"))
        let subscription = fixture.fs.changeEvents.subscribe(.everything)
        try fixture.fs.rename(
            parent: .root, name: FileName("a"), newParent: .root, newName: FileName("b"), flags: .exchange)
        #expect(summary(drain(subscription)) == ["renamed b <- a", "renamed a <- b"])
        // "a" (never uploaded) replaces "b": it takes b's identity, so nothing is deleted.
        let idOfB = try fixture.fileID(of: fixture.lookupIno("b"))
        try fixture.fs.rename(parent: .root, name: FileName("a"), newParent: .root, newName: FileName("b"), flags: [])
        let events = drain(subscription)
        #expect(summary(events) == ["renamed b <- a"])
        #expect(events.first?.fileID == idOfB?.hex)
    }

    @Test func attributeChangesAreModified() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("12345"))
        let subscription = fixture.fs.changeEvents.subscribe(.everything)
        var chmod = AttributeChanges()
        chmod.mode = 0o600
        _ = try fixture.fs.setattr(ino, chmod, handle: nil)
        var times = AttributeChanges()
        times.mtime = .at(1_000_000_000)
        _ = try fixture.fs.setattr(ino, times, handle: nil)
        var truncate = AttributeChanges()
        truncate.size = 2
        _ = try fixture.fs.setattr(ino, truncate, handle: nil)
        try fixture.fs.xattrs.set(ino, name: "user.k", value: bytes("v"), mode: .any)
        try fixture.fs.xattrs.remove(ino, name: "user.k")
        #expect(summary(drain(subscription)) == Array(repeating: "modified f", count: 5))
        _ = try fixture.fs.setattr(ino, chmod, handle: nil)
        try fixture.fs.xattrs.set(ino, name: "user.syncfs.pinned", value: bytes("1"), mode: .any)
        #expect(drain(subscription).isEmpty, "the same mode again and a pin change nothing that syncs")
    }

    @Test func aTruncateThroughAWriterIsPartOfItsBurst() throws {
        let fixture = try FileSystemFixture()
        let ino = try fixture.makeFile("f", contents: bytes("12345"))
        let subscription = fixture.fs.changeEvents.subscribe(.everything)
        let handle = try fixture.fs.open(ino, flags: O_WRONLY, caller: testCaller)
        var truncate = AttributeChanges()
        truncate.size = 1
        _ = try fixture.fs.setattr(ino, truncate, handle: handle)
        try fixture.write(handle, bytes("z"), at: 1)
        #expect(drain(subscription).isEmpty)
        fixture.fs.fileIO.release(handle)
        #expect(summary(drain(subscription)) == ["modified f"])
    }
}

@Suite("ChangeEvents: remote changes", .serialized)
struct RemoteChangeEventsTests {
    @Test func theFollowerPublishesRemoteCreatesModificationsRenamesAndDeletes() async throws {
        let pair = try SyncedPair()
        let subscription = pair.b.fs.changeEvents.subscribe(.everything)
        var seen: [ChangeEvent] = []
        func waitFor(_ count: Int, _ what: String) async throws {
            try await eventually(what) {
                // The sync rounds' events (`scan-…`, `synced`) are not changes.
                seen += drain(subscription).filter { !$0.isMountLevel }
                return seen.count >= count
            }
        }
        let dir = try pair.a.mkdir("docs")
        let ino = try pair.a.makeFile("draft.txt", contents: bytes("v1"))
        try await waitFor(2, "two creates on B")
        let handle = try pair.a.fs.open(ino, flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try pair.a.write(handle, bytes("v2"), at: 0)
        pair.a.fs.fileIO.release(handle)
        try await waitFor(3, "the modification on B")
        try pair.a.fs.rename(
            parent: .root, name: FileName("draft.txt"), newParent: dir, newName: FileName("final.txt"), flags: [])
        try await waitFor(4, "the rename on B")
        try pair.a.fs.unlink(parent: dir, name: FileName("final.txt"))
        try await waitFor(5, "the delete on B")
        #expect(
            summary(seen) == [
                "created docs", "created draft.txt", "modified draft.txt", "renamed docs/final.txt <- draft.txt",
                "deleted docs/final.txt",
            ])
        #expect(seen.allSatisfy { $0.origin == .remote })
        let id = pair.a.fileID(of: ino)?.hex
        #expect(seen.dropFirst().allSatisfy { $0.fileID == id }, "one identity from create to delete")
        #expect(pair.b.fs.outbox.items.isEmpty, "applying remote changes queues nothing")
    }
}
