import Foundation
import Hummingbird
import SyncBackend

/// The lock endpoints (`ContainerLocks` over HTTP, doc/PROTOCOL.md "Locks"), for the container's
/// own tokens (the same checks as every other container endpoint run first). Request bodies are
/// at most `WireProtocol.maxLockBodyBytes`; the container checks what they ask
/// (`LockTable`: leases, ranges, holder names, limits: `400`). A container whose backend keeps no
/// locks answers `501 notImplemented`. Every lock answered carries its holder's public ID
/// (`LockSession.publicID`) in place of its session: a session is a bearer secret of its mount.
extension SyncResponder {
    /// `200` with the lease's expiry when granted, `409` with the blocking lock otherwise.
    func lock(_ call: Call) async throws(WireFailure) -> Response {
        let request = try await Self.lockBody(LockRequest.self, of: call)
        let locks = try Self.locks(of: call)
        let answer = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await locks.lock(request.claim, leaseSeconds: request.leaseSeconds)
        }
        switch answer {
        case .granted: return JSONResponse.make(LockResponse(answer), status: 200)
        case .blocked(let held): return JSONResponse.make(LockResponse(.blocked(by: Self.shown(held))), status: 409)
        }
    }

    /// `204`: the range is no longer held (whether or not it was).
    func unlock(_ call: Call) async throws(WireFailure) -> Response {
        let release = try await Self.lockBody(LockRelease.self, of: call)
        let locks = try Self.locks(of: call)
        try await WireFailure.translating { () async throws(ContainerProtocolError) in try await locks.unlock(release) }
        return JSONResponse.empty(status: 204)
    }

    /// `200` with every lock the session still holds, each renewed.
    func renewLocks(_ call: Call) async throws(WireFailure) -> Response {
        let renewal = try await Self.lockBody(LockRenewal.self, of: call)
        let locks = try Self.locks(of: call)
        let held = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await locks.renewLocks(session: renewal.session, leaseSeconds: renewal.leaseSeconds).map(Self.shown)
        }
        return await JSONResponse.make(LockList(locks: held), status: 200, estimatedBytes: Self.estimatedBytes(held))
    }

    /// `204`: the session holds nothing any more.
    func releaseLocks(_ call: Call) async throws(WireFailure) -> Response {
        let release = try await Self.lockBody(LockSessionRelease.self, of: call)
        let locks = try Self.locks(of: call)
        try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await locks.releaseLocks(session: release.session)
        }
        return JSONResponse.empty(status: 204)
    }

    /// `200` with the live locks on one entry (none: an empty list, whether or not it exists).
    func entryLocks(_ call: Call) async throws(WireFailure) -> Response {
        let text = call.captures["ID"] ?? ""
        guard let id = FileID(hex: text) else {
            throw WireFailure(.invalidRequest, "'\(text)' is not an entry ID (32 lowercase hex digits)")
        }
        let locks = try Self.locks(of: call)
        let held = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await locks.locks(on: id).map(Self.shown)
        }
        return await JSONResponse.make(LockList(locks: held), status: 200, estimatedBytes: Self.estimatedBytes(held))
    }

    /// The body of a lock request, decoded.
    private static func lockBody<T: Decodable & Sendable>(_ type: T.Type, of call: Call) async throws(WireFailure) -> T
    {
        let body = try await RequestReading.body(
            of: call.request, limit: WireProtocol.maxLockBodyBytes, reserve: WireProtocol.maxLockBodyBytes,
            as: Data.self)
        return try await RequestReading.decode(type, from: body)
    }

    /// The container's locks, or `501` when its backend keeps none.
    private static func locks(of call: Call) throws(WireFailure) -> any ContainerLocks {
        guard let locks = call.container as? any ContainerLocks else {
            throw WireFailure(.notImplemented, "the container '\(call.name)' keeps no locks on this server")
        }
        return locks
    }

    /// `lock` as others may see it: its session replaced by the session's public ID.
    private static func shown(_ lock: HeldLock) -> HeldLock {
        var shown = lock
        shown.session = lock.session.publicID
        return shown
    }

    /// An upper bound of a lock list's JSON size.
    private static func estimatedBytes(_ locks: [HeldLock]) -> Int {
        64 + locks.count * (320 + LockLimits.maxHolderNameBytes * 6)
    }
}
