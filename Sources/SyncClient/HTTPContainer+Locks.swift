import NIOHTTP1
import SyncBackend

/// A server's cross-mount locks (`POST .../locks`, `.../locks/unlock`, `.../locks/renew`,
/// `.../locks/release`, `GET .../entries/ID/locks`; doc/PROTOCOL.md "Locks").
///
/// Contract, beyond `ContainerLocks`' and `HTTPContainer`'s:
/// - Arguments are checked before anything is sent (`LockLimits.lease`, `LockTable.checked`:
///   `invalidRequest`).
/// - Every answer is checked whole (`LockAnswerValidation`: a grant's expiry plausible for the
///   lease asked, a blocking lock that really conflicts, renewed locks of the session, listed
///   locks of the file) and bounded in size; an answer that breaks the rules or does not decode
///   is `unavailable`, as is a `404` (a server older than locks answers so, its message says).
/// - A server whose container keeps no locks answers `501`: `unavailable` ("the server keeps no
///   locks"), so a mount's locks stay local to it, as on a container without locks.
/// - The server answers every holder by its public ID (`LockSession.publicID`); the sessions this
///   process sent come back as themselves (`LockSessionsInUse`), every other holder's stays
///   its public ID.
extension HTTPContainer: ContainerLocks {
    /// The largest lock answer read: a list of `LockLimits.maxLocksPerFile` locks with long
    /// holder names fits.
    static let maxLockAnswer = 8 << 20

    public func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        let lease = try LockLimits.lease(leaseSeconds)
        let claim = try LockTable.checked(claim)
        LockSessionsInUse.note(claim.session)
        let answer = try await lockAnswer(
            .POST, WireProtocol.Path.locks(address.name), json: LockRequest(claim: claim, leaseSeconds: lease),
            expecting: [200, 409])
        let response = try WireAnswer.decode(LockResponse.self, answer, address: address)
        guard var decided = response.answer, (answer.status == 200) == (response.expiresAt != nil) else {
            throw .unavailable(
                "\(address.origin) sent a lock answer that breaks the protocol: not one of granted or blocked")
        }
        if case .blocked(let held) = decided { decided = .blocked(by: LockSessionsInUse.restored(held)) }
        if let problem = LockAnswerValidation.problem(
            with: decided, to: claim, leaseSeconds: lease, now: WallClock.nanoseconds())
        {
            throw .unavailable("\(address.origin) sent a lock answer that breaks the protocol: \(problem)")
        }
        return decided
    }

    public func unlock(_ release: LockRelease) async throws(ContainerProtocolError) {
        var release = release
        release.range = try LockTable.checkedRange(release.range, kind: release.kind)
        LockSessionsInUse.note(release.session)
        _ = try await lockAnswer(.POST, WireProtocol.Path.unlock(address.name), json: release, expecting: [204])
    }

    public func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError)
        -> [HeldLock]
    {
        let lease = try LockLimits.lease(leaseSeconds)
        LockSessionsInUse.note(session)
        let answer = try await lockAnswer(
            .POST, WireProtocol.Path.renewLocks(address.name), json: LockRenewal(session: session, leaseSeconds: lease),
            expecting: [200])
        let locks = try WireAnswer.decode(LockList.self, answer, address: address).locks.map(
            LockSessionsInUse.restored)
        if let problem = LockAnswerValidation.problem(
            withRenewed: locks, of: session, leaseSeconds: lease, now: WallClock.nanoseconds())
        {
            throw .unavailable("\(address.origin) sent renewed locks that break the protocol: \(problem)")
        }
        return locks
    }

    public func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        _ = try await lockAnswer(
            .POST, WireProtocol.Path.releaseLocks(address.name), json: LockSessionRelease(session: session),
            expecting: [204])
    }

    public func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        let answer = try await send(.GET, WireProtocol.Path.entryLocks(address.name, fileID), limit: Self.maxLockAnswer)
        try Self.check(answer, expecting: [200], address: address)
        let locks = try WireAnswer.decode(LockList.self, answer, address: address).locks.map(
            LockSessionsInUse.restored)
        if let problem = LockAnswerValidation.problem(withLocks: locks, on: fileID, now: WallClock.nanoseconds()) {
            throw .unavailable("\(address.origin) sent locks of \(fileID) that break the protocol: \(problem)")
        }
        return locks
    }

    private func lockAnswer<Body: Encodable>(
        _ method: HTTPMethod, _ path: String, json: Body, expecting statuses: Set<Int>
    ) async throws(ContainerProtocolError) -> Answer {
        let answer = try await send(method, path, json: json)
        try Self.check(answer, expecting: statuses, address: address)
        return answer
    }

    private static func check(_ answer: Answer, expecting statuses: Set<Int>, address: ServerAddress)
        throws(ContainerProtocolError)
    {
        guard !statuses.contains(answer.status) else { return }
        if answer.status == 501 {
            throw .unavailable("\(address.origin): the server keeps no locks for this container")
        }
        let failure = WireAnswer.failure(answer, address: address)
        if answer.status == 404, case .unavailable(let message) = failure {
            throw .unavailable(message + " (a server older than cross-mount locks answers so as well)")
        }
        if statuses.contains(204) || statuses.contains(200), (200..<300).contains(answer.status) {
            throw .unavailable("\(address.origin) answered \(answer.status), which is not this protocol's answer")
        }
        throw failure
    }
}
