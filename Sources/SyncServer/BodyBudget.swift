import HTTPTypes
import Synchronization

/// The request bodies in flight, counted per token, per container and for the whole server
/// (`ServerLimits`): bytes for every body, upload slots for chunk uploads. `tryAcquire` answers at
/// once (no queue); every grant must be given back with `release` exactly once.
///
/// A token at its share cannot take what its container's other tokens, or other containers, need;
/// a container at its share cannot take the server's. So one token's slow uploads hold at most
/// its own share (and the deadlines of `ConnectionGuard` end them), never every slot.
final class BodyBudget: Sendable {
    struct Usage: Equatable {
        var uploads = 0
        var bytes = 0
    }

    /// What one request holds.
    struct Grant: Sendable {
        let container: String
        let token: String
        let bytes: Int
        let upload: Bool
    }

    /// Which share is full.
    enum Refusal: Error, Equatable {
        case token(String)
        case container(String)
        case server(String)
    }

    private struct State {
        var server = Usage()
        var containers: [String: Usage] = [:]
        var tokens: [String: Usage] = [:]
    }

    let limits: ServerLimits
    private let state = Mutex(State())

    init(limits: ServerLimits) { self.limits = limits }

    /// Reserves `bytes` (and a slot if `upload`) for a request of `token` to `container`.
    func tryAcquire(container: String, token: String, bytes: Int, upload: Bool) -> Result<Grant, Refusal> {
        let slot = upload ? 1 : 0
        return state.withLock { state in
            let mine = state.tokens[token] ?? Usage()
            let theirs = state.containers[container] ?? Usage()
            if let refusal = Self.refusal(mine, limits.perToken, bytes: bytes, slot: slot, holder: "this token") {
                return .failure(.token(refusal))
            }
            if let refusal = Self.refusal(
                theirs, limits.perContainer, bytes: bytes, slot: slot, holder: "the container '\(container)'")
            {
                return .failure(.container(refusal))
            }
            if let refusal = Self.refusal(state.server, limits.server, bytes: bytes, slot: slot, holder: "the server") {
                return .failure(.server(refusal))
            }
            state.tokens[token] = Usage(uploads: mine.uploads + slot, bytes: mine.bytes + bytes)
            state.containers[container] = Usage(uploads: theirs.uploads + slot, bytes: theirs.bytes + bytes)
            state.server = Usage(uploads: state.server.uploads + slot, bytes: state.server.bytes + bytes)
            return .success(Grant(container: container, token: token, bytes: bytes, upload: upload))
        }
    }

    func release(_ grant: Grant) {
        let slot = grant.upload ? 1 : 0
        state.withLock { state in
            func giveBack(_ usage: inout Usage) {
                precondition(usage.uploads >= slot && usage.bytes >= grant.bytes, "release of a grant not held")
                usage.uploads -= slot
                usage.bytes -= grant.bytes
            }
            giveBack(&state.server)
            giveBack(&state.containers[grant.container, default: Usage()])
            if state.containers[grant.container] == Usage() { state.containers[grant.container] = nil }
            giveBack(&state.tokens[grant.token, default: Usage()])
            if state.tokens[grant.token] == Usage() { state.tokens[grant.token] = nil }
        }
    }

    /// Chunk uploads holding a slot now.
    var uploadsInProgress: Int { state.withLock { $0.server.uploads } }

    /// Body bytes reserved now on the whole server.
    var bytesInFlight: Int { state.withLock { $0.server.bytes } }

    /// Why `usage` plus this request would exceed `share`, or nil. A body larger than the whole
    /// share (only possible with very small configured limits) is admitted when nothing else is held.
    private static func refusal(_ usage: Usage, _ share: ServerLimits.Share, bytes: Int, slot: Int, holder: String)
        -> String?
    {
        if slot > 0, usage.uploads + slot > share.uploads {
            return "\(holder) has \(usage.uploads) chunk uploads in progress, the most it may have at once"
        }
        if usage.bytes > 0, usage.bytes + bytes > share.bytes {
            return "\(holder) has \(usage.bytes >> 20) MiB of request bodies in flight; this one "
                + "(\(bytes >> 10) KiB) would pass its \(share.bytes >> 20) MiB"
        }
        return nil
    }
}

/// A byte budget with no queue: the memory for decoding JSON bodies (`ServerLimits`).
final class MemoryBudget: Sendable {
    let capacity: Int
    private let used = Mutex(0)

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Runs `body` holding `cost` bytes (at most the whole budget), or returns nil at once if
    /// they are not free now.
    func holding<T>(
        _ cost: Int, _ body: () async throws(WireFailure) -> T
    ) async throws(WireFailure) -> T? {
        let cost = min(max(cost, 1), capacity)
        let granted = used.withLock { used in
            guard used + cost <= capacity else { return false }
            used += cost
            return true
        }
        guard granted else { return nil }
        defer { used.withLock { $0 -= cost } }
        return try await body()
    }

    var inUse: Int { used.withLock { $0 } }
}

extension BodyBudget {
    /// `tryAcquire`, its refusal as the protocol answers it: `429` beyond the token's or the
    /// container's share, `503` beyond the server's, with `Retry-After`.
    func reserve(_ bytes: Int, container: String, token: String, upload: Bool) throws(WireFailure) -> Grant {
        let retry: HTTPFields = [.retryAfter: String(ServerLimits.retryAfterSeconds)]
        switch tryAcquire(container: container, token: token, bytes: bytes, upload: upload) {
        case .success(let grant):
            return grant
        case .failure(.token(let why)), .failure(.container(let why)):
            throw WireFailure(.tooManyRequests, "\(why); retry in a moment", headers: retry)
        case .failure(.server(let why)):
            throw WireFailure(.unavailable, "\(why); retry in a moment", headers: retry)
        }
    }
}
