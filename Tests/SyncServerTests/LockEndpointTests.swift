import Foundation
import SyncBackend
import SyncServerTesting
import TestSupport
import Testing

@testable import SyncClient
@testable import SyncServer

/// Cross-mount locks over HTTP: the server's strict request checks, `501` for a container
/// without locks (to the client: unavailable), holders shown by public ID only, leases that
/// survive a server restart, and the client's refusal of a hostile server's answers. The contract itself runs over HTTP in `ContainerLocksConformanceTests`.
@Suite("Locks over HTTP")
struct LockEndpointTests {
    static let second: Int64 = 1_000_000_000
    let session = LockSession.random()
    let file = FileID.random()

    var claim: LockClaim {
        LockClaim(
            fileID: file, kind: .posix, mode: .exclusive, range: LockRange(start: 10, end: 19), session: session,
            owner: 3, holderName: "laptop")
    }

    /// A lock of someone else on the claimed file that conflicts with `claim`.
    func otherLock(expiresIn seconds: Int64 = 20) -> HeldLock {
        HeldLock(
            fileID: file, kind: .posix, mode: .shared, range: LockRange(start: 0, end: 15), session: .random(),
            owner: 9, holderName: "desktop", expiresAt: WallClock.nanoseconds() + seconds * Self.second)
    }

    @Test func aHostileServersLockAnswersAreRefused() async throws {
        let canned = CannedLockContainer()
        try await HistoryServer.run(["box": canned]) { served in
            let client = try served.client("box")
            let now = WallClock.nanoseconds()
            var mine = otherLock()
            mine.session = session
            mine.owner = 3
            var elsewhere = otherLock()
            elsewhere.fileID = .random()
            var flockKind = otherLock()
            flockKind.kind = .flock
            flockKind.range = .wholeFile
            var noConflict = otherLock()
            noConflict.range = LockRange(start: 20, end: 30)
            var badName = otherLock()
            badName.holderName = "evil\u{1B}]0;title\u{07}"
            var backwards = otherLock()
            backwards.range = LockRange(start: 15, end: 0)
            var partialFlock = otherLock()
            partialFlock.kind = .flock
            var farFuture = otherLock()
            farFuture.expiresAt = .max
            let forged: [(String, LockAnswer)] = [
                ("a lease of a century", .granted(expiresAt: now + 100 * 365 * 86_400 * Self.second)),
                ("a lease that ended long ago", .granted(expiresAt: 0)),
                ("a negative expiry", .granted(expiresAt: -5)),
                ("blocked by the claimant's own lock", .blocked(by: mine)),
                ("blocked by a lock on another file", .blocked(by: elsewhere)),
                ("blocked by a flock", .blocked(by: flockKind)),
                ("blocked by a lock that does not overlap", .blocked(by: noConflict)),
                ("a holder name with control characters", .blocked(by: badName)),
                ("a backwards range", .blocked(by: backwards)),
                ("a flock of part of a file", .blocked(by: partialFlock)),
                ("a blocking lease without end", .blocked(by: farFuture)),
            ]
            for (what, answer) in forged {
                canned.answer { $0.lock = answer }
                let error = await protocolError { _ = try await client.lock(claim, leaseSeconds: 30) }
                #expect(error?.isUnavailable == true, "\(what): \(String(describing: error))")
                #expect(error?.description.contains("breaks the protocol") == true, "\(what)")
            }
            // A valid answer passes.
            let blocker = otherLock()
            var shownBlocker = blocker
            shownBlocker.session = blocker.session.publicID
            canned.answer { $0.lock = .blocked(by: blocker) }
            #expect(try await client.lock(claim, leaseSeconds: 30) == .blocked(by: shownBlocker))

            var ofAnotherSession = otherLock()
            ofAnotherSession.session = .random()
            canned.answer { $0.renewed = [ofAnotherSession] }
            #expect(
                await protocolError { _ = try await client.renewLocks(session: session, leaseSeconds: 30) }?
                    .isUnavailable == true)
            var own = otherLock()
            own.session = session
            canned.answer { $0.renewed = [own, own] }
            #expect(
                await protocolError { _ = try await client.renewLocks(session: session, leaseSeconds: 30) }?
                    .isUnavailable == true)
            canned.answer { $0.renewed = [own] }
            #expect(try await client.renewLocks(session: session, leaseSeconds: 30) == [own])

            canned.answer { $0.listed = [elsewhere] }
            #expect(await protocolError { _ = try await client.locks(on: file) }?.isUnavailable == true)
            canned.answer { $0.listed = [badName] }
            #expect(await protocolError { _ = try await client.locks(on: file) }?.isUnavailable == true)
            canned.answer { $0.listed = [blocker] }
            #expect(try await client.locks(on: file) == [shownBlocker])
        }
    }

    @Test func badRequestsAre400AndLargeOnes413() async throws {
        let canned = CannedLockContainer()
        try await HistoryServer.run(["box": canned]) { served in
            let token = try served.token("box")
            let locks = WireProtocol.Path.locks("box")
            let good = String(
                decoding: try JSONEncoder().encode(LockRequest(claim: claim, leaseSeconds: 30)), as: UTF8.self)
            let bodies: [(String, String)] = [
                (locks, "not json"),
                (locks, good.replacingOccurrences(of: "\"leaseSeconds\":30", with: "\"leaseSeconds\":4")),
                (locks, good.replacingOccurrences(of: "\"leaseSeconds\":30", with: "\"leaseSeconds\":601")),
                (locks, good.replacingOccurrences(of: session.hex, with: "ABC")),
                (locks, good.replacingOccurrences(of: "\"start\":10", with: "\"start\":20")),
                (locks, good.replacingOccurrences(of: "\"laptop\"", with: "\"\"")),
                (locks, good.replacingOccurrences(of: "\"posix\"", with: "\"fcntl\"")),
                (locks, good.replacingOccurrences(of: "\"owner\":3", with: "\"owner\":-3")),
                (WireProtocol.Path.renewLocks("box"), #"{"session":"\#(session.hex)","leaseSeconds":0}"#),
                (WireProtocol.Path.releaseLocks("box"), #"{"session":"00"}"#),
                (WireProtocol.Path.unlock("box"), #"{"fileID":"\#(file.hex)","kind":"posix"}"#),
            ]
            #expect(good.contains("\"leaseSeconds\":30") && good.contains(session.hex) && good.contains("\"start\":10"))
            for (path, body) in bodies {
                let reply = try await served.post(path, body: Array(body.utf8), token: token)
                #expect(reply.status == 400, "\(path) \(body): \(reply.status) \(reply.text)")
                #expect(reply.code == .invalidRequest, "\(body): \(reply.text)")
            }
            let padded = good.replacingOccurrences(
                of: "\"laptop\"", with: "\"laptop\"" + String(repeating: " ", count: WireProtocol.maxLockBodyBytes))
            let large = try await served.post(locks, body: Array(padded.utf8), token: token)
            #expect(large.status == 413, "\(large.status) \(large.text)")
            #expect(
                try await served.get(WireProtocol.Path.container("box") + "/entries/xyz/locks", token: token).status
                    == 400)
            // Nothing was locked by any of them.
            #expect(try await canned.locks(on: file).isEmpty)
            let granted = try await served.post(locks, body: Array(good.utf8), token: token)
            #expect(granted.status == 200, "\(granted.text)")
            #expect(try await canned.locks(on: file).map(\.holderName) == ["laptop"])
        }
    }

    /// The server answers `501`; the client makes it `unavailable`, so a mount keeps its locks
    /// local, as on a container without locks (not an error for every lock).
    @Test func aContainerWithoutLocksAnswers501AndTheClientFindsLocksUnavailable() async throws {
        try await HistoryServer.run(["plain": HistorylessContainer()]) { served in
            let token = try served.token("plain")
            let raw = try await served.get(
                WireProtocol.Path.container("plain") + "/entries/\(file.hex)/locks", token: token)
            #expect(raw.status == 501, "\(raw.status) \(raw.text)")
            let client = try served.client("plain")
            let error = await protocolError { _ = try await client.lock(claim, leaseSeconds: 30) }
            #expect(error?.isUnavailable == true && error?.description.contains("keeps no locks") == true, "\(error)")
            let calls: [(String, () async throws -> Void)] = [
                (
                    "unlock",
                    { try await client.unlock(LockRelease(fileID: file, kind: .posix, session: session, owner: 3)) }
                ),
                ("renew", { _ = try await client.renewLocks(session: session, leaseSeconds: 30) }),
                ("release", { try await client.releaseLocks(session: session) }),
                ("list", { _ = try await client.locks(on: file) }),
            ]
            for (what, call) in calls {
                #expect(await protocolError(call)?.isUnavailable == true, "\(what)")
            }
        }
    }

    /// A session is a bearer secret of its mount: the server shows every holder by its public
    /// ID, a call by a public ID touches nothing, and the holder's own client still sees its
    /// locks under its own session.
    @Test func holdersAreShownByPublicIDOnly() async throws {
        let canned = CannedLockContainer()
        try await HistoryServer.run(["box": canned]) { served in
            let token = try served.token("box")
            // Another mount's lock (its session never sent by this process).
            let holder = LockSession.random()
            var held = claim
            held.session = holder
            guard case .granted(let expiresAt) = try await canned.lock(held, leaseSeconds: 60) else {
                throw TestFailure("not granted")
            }
            let listing = try await served.get(
                WireProtocol.Path.container("box") + "/entries/\(file.hex)/locks", token: token)
            #expect(listing.status == 200 && listing.text.contains(holder.publicID.hex), "\(listing.text)")
            #expect(!listing.text.contains(holder.hex), "a listing shows the holder's session")
            let rival = try JSONEncoder().encode(LockRequest(claim: claim, leaseSeconds: 30))
            let blocked = try await served.post(WireProtocol.Path.locks("box"), body: Array(rival), token: token)
            #expect(blocked.status == 409 && blocked.text.contains(holder.publicID.hex), "\(blocked.text)")
            #expect(!blocked.text.contains(holder.hex), "a 409 shows the holder's session")

            let client = try served.client("box")
            #expect(try await client.locks(on: file).map(\.session) == [holder.publicID])
            let publicID = holder.publicID
            try await client.unlock(LockRelease(fileID: file, kind: .posix, session: publicID, owner: held.owner))
            #expect(try await client.renewLocks(session: publicID, leaseSeconds: 600).isEmpty)
            try await client.releaseLocks(session: publicID)
            let still = try await canned.locks(on: file)
            #expect(still.map(\.session) == [holder] && still.map(\.expiresAt) == [expiresAt])

            // The holder's own client: its lock is its own.
            #expect(try await client.renewLocks(session: holder, leaseSeconds: 60).map(\.session) == [holder])
            #expect(try await client.locks(on: file).map(\.session) == [holder])
            guard case .blocked(let by) = try await client.lock(claim, leaseSeconds: 30) else {
                throw TestFailure("the rival claim was granted")
            }
            #expect(by.session == holder)
        }
    }

    @Test func leasesSurviveAServerRestart() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let first = try await SyncTestServer.start(root: root.path)
        let token = try first.makeContainer("box")
        let info = try await HTTPContainer.fetchInfo(
            address: try ServerAddress(parsing: first.url(container: "box")), token: token)
        let before = try HTTPContainer(
            address: try ServerAddress(parsing: first.url(container: "box")), token: token, containerID: info.id)
        let answer = try await before.lock(claim, leaseSeconds: 60)
        await first.stop()
        guard case .granted(let expiresAt) = answer else { throw TestFailure("not granted: \(answer)") }

        let second = try await SyncTestServer.start(root: root.path)
        let after = try HTTPContainer(
            address: try ServerAddress(parsing: second.url(container: "box")), token: token, containerID: info.id)
        var failure: (any Error)?
        do {
            let held = try await after.locks(on: file)
            #expect(held.map(\.session) == [session] && held.map(\.expiresAt) == [expiresAt])
            var rival = claim
            rival.session = .random()
            if case .blocked(let by) = try await after.lock(rival, leaseSeconds: 30) {
                #expect(by.session == session)
            } else {
                Issue.record("the lock did not survive the restart")
            }
            #expect(try await after.renewLocks(session: session, leaseSeconds: 30).map(\.range) == [claim.range])
        } catch {
            failure = error
        }
        await second.stop()
        if let failure { throw failure }
    }
}

extension ContainerProtocolError {
    fileprivate var isInvalidRequest: Bool {
        if case .invalidRequest = self { return true }
        return false
    }

    fileprivate var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }
}

/// The error `body` throws, if it is a `ContainerProtocolError`.
private func protocolError(_ body: () async throws -> Void) async -> ContainerProtocolError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? ContainerProtocolError
    }
}
