import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// `discard` of a tripped mass-delete guard while changes of the burst it let go before it
/// tripped are still being committed (a batch commits its admitted changes after a later one of
/// it tripped the guard): their commit must not land after their restore and undo it.
extension SyncEngineTests {
    @Test func discardWaitsForTheBurstsChangesStillBeingCommitted() async throws {
        let base = InMemoryContainer()
        let gate = CommitGate(base)
        defer { gate.open() }
        let pair = try SyncedPair(container: base, viewOfA: gate)
        // 60 files: 30 % of the tree is 18, so the burst trips the guard at its 50th rewrite
        // (`minimumForFraction`), after the first `prompt` of it went.
        var original: [String: [UInt8]] = [:]
        try pair.withEngineAStopped {
            for index in 0..<60 {
                let name = "f\(index).bin"
                original[name] = bytes("file \(index)\n")
                try pair.a.makeFile(name, contents: original[name]!)
            }
        }
        try await eventually("the files on B") { try pair.b.childNames().count == 60 }
        try await pair.settle()
        gate.close()
        // A new engine on A: every version is established for it (it never saw one arrive).
        try pair.withEngineAStopped {
            for name in original.keys.sorted() {
                try rewrite(pair.a, name, with: (0..<4096).map { _ in UInt8.random(in: 0...255) })
            }
        }
        let deleteGuard = pair.engineA.uploader.deleteGuard
        try await eventually("the guard holds while a commit of the burst waits") {
            deleteGuard.isHeld && gate.waiting >= 1
        }
        let sent = try #require(deleteGuard.currentHold?.sent)
        #expect(!sent.isEmpty, "changes of the burst went before it tripped")

        // Still on their way: nothing is undone, the guard still holds.
        let early = try pair.engineA.guarded.discard(sentWait: .milliseconds(200))
        #expect(early == .sentStillLanding(count: sent.count))
        #expect(deleteGuard.isHeld)

        gate.open()
        try await eventually("the burst's first changes landed") {
            !pair.a.fs.outbox.anyInFlight(sent.map(\.id))
        }
        guard case .discarded(_, kept: 0) = try pair.engineA.guarded.discard() else {
            Issue.record("discard kept changes after they landed")
            return
        }
        #expect(!deleteGuard.isHeld)
        for (name, content) in original {
            try await eventually("\(name) is back on A") { try contents(pair.a, name) == content }
            try await eventually("\(name) is back on B") { try contents(pair.b, name) == content }
        }
    }

    /// Writes `content` over the whole file `name` (a program saving it in place).
    private func rewrite(_ fixture: FileSystemFixture, _ name: String, with content: [UInt8]) throws {
        let handle = try fixture.fs.open(
            try fixture.lookupIno(name), flags: O_WRONLY | O_TRUNC, caller: testCaller)
        try fixture.write(handle, content, at: 0)
        fixture.fs.fileIO.release(handle)
    }
}
