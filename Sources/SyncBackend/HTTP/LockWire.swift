/// The bodies of the lock endpoints (`ContainerLocks` over HTTP, doc/PROTOCOL.md "Locks").

/// `POST /v1/containers/NAME/locks` request body.
public struct LockRequest: Codable, Equatable, Sendable {
    public var claim: LockClaim
    public var leaseSeconds: Int

    public init(claim: LockClaim, leaseSeconds: Int) {
        self.claim = claim
        self.leaseSeconds = leaseSeconds
    }
}

/// `POST /v1/containers/NAME/locks` response body: `200` with `expiresAt` when granted, `409`
/// with `blockedBy` when another holder's lock conflicts (exactly one of the two is set).
public struct LockResponse: Codable, Equatable, Sendable {
    public var expiresAt: Int64?
    public var blockedBy: HeldLock?

    public init(_ answer: LockAnswer) {
        switch answer {
        case .granted(let expiresAt): self.expiresAt = expiresAt
        case .blocked(let held): self.blockedBy = held
        }
    }

    /// The answer this body carries, or nil when it carries neither or both.
    public var answer: LockAnswer? {
        switch (expiresAt, blockedBy) {
        case (let expiresAt?, nil): return .granted(expiresAt: expiresAt)
        case (nil, let held?): return .blocked(by: held)
        default: return nil
        }
    }
}

/// `POST /v1/containers/NAME/locks/renew` request body.
public struct LockRenewal: Codable, Equatable, Sendable {
    public var session: LockSession
    public var leaseSeconds: Int

    public init(session: LockSession, leaseSeconds: Int) {
        self.session = session
        self.leaseSeconds = leaseSeconds
    }
}

/// `POST /v1/containers/NAME/locks/release` request body: every lock of the session goes.
public struct LockSessionRelease: Codable, Equatable, Sendable {
    public var session: LockSession

    public init(session: LockSession) { self.session = session }
}

/// `POST .../locks/renew` and `GET .../entries/ID/locks` response body.
public struct LockList: Codable, Equatable, Sendable {
    public var locks: [HeldLock]

    public init(locks: [HeldLock]) { self.locks = locks }
}
