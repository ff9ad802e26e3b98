import AsyncHTTPClient
import Foundation
import NIOCore
import SyncBackend
import SyncBackendTesting
import Synchronization

/// A container whose lock answers a test sets — valid or not — as a hostile server would send
/// them; a call without a canned answer goes to its `InMemoryContainer`.
final class CannedLockContainer: ForwardingTestContainer, ContainerLocks {
    struct Canned: Sendable {
        var lock: LockAnswer?
        var renewed: [HeldLock]?
        var listed: [HeldLock]?
    }

    let base = InMemoryContainer()
    private let canned = Mutex(Canned())

    func answer(_ change: (inout Canned) -> Void) { canned.withLock { change(&$0) } }

    func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer {
        if let forged = canned.withLock({ $0.lock }) { return forged }
        return try await base.lock(claim, leaseSeconds: leaseSeconds)
    }

    func unlock(_ release: LockRelease) async throws(ContainerProtocolError) { try await base.unlock(release) }

    func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError) -> [HeldLock] {
        if let forged = canned.withLock({ $0.renewed }) { return forged }
        return try await base.renewLocks(session: session, leaseSeconds: leaseSeconds)
    }

    func releaseLocks(session: LockSession) async throws(ContainerProtocolError) {
        try await base.releaseLocks(session: session)
    }

    func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock] {
        if let forged = canned.withLock({ $0.listed }) { return forged }
        return try await base.locks(on: fileID)
    }
}

extension HistoryServer {
    /// A raw POST of `body` to `path` with `token`.
    func post(_ path: String, body: [UInt8], token: String) async throws -> Reply {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var request = HTTPClientRequest(url: server.baseURL + path)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        let reply: Reply
        do {
            reply = try await ServerFixture.execute(client, request, timeout: .seconds(60))
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        return reply
    }
}
