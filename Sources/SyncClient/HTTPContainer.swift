import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncBackend
import Synchronization

/// A container on a sync server, reached over HTTP(S) with a bearer token (doc/PROTOCOL.md).
/// Passes the same conformance suite as the local container.
///
/// The contract, beyond `Container`'s:
/// - **Unreachable is never "deleted".** No answer at all (refused, reset, TLS failure, a request
///   past its deadline), a 5xx, a rejected token (401/403), an unknown container (404 `notFound`)
///   and any answer that is not this protocol's (a proxy's page, a body that does not decode) are
///   `unavailable` — retryable, saying nothing about the data. Only this protocol's own JSON
///   `entryNotFound` makes `entry` return nil, and only `chunkNotFound` is `chunkNotFound`.
/// - **Busy is not unreachable.** A `503` or `429` is the server saying "not now": the call asks
///   again after its own backoff (`BusyBackoff`: 0.5 s doubling to 30 s, with jitter, at least
///   `Retry-After`), and after 60 s of refusals throws `busy` (retryable; the upload queue keeps
///   its own backoff for it, which another call's success does not cut short).
/// - **Deadlines** (every call has one; doc/SEMANTICS.md, "A server that does not answer"): 5 s
///   to connect; then until the answer's head 30 s per request, 10 s for a chunk read (readers of
///   placeholders wait on it: the server answers a chunk at once, its body streams after the
///   head), 120 s for a chunk upload (the head comes after the whole body was sent and checked)
///   and a batch of commits, 240 s for a batch of chunks;
///   a change wait asks the server for at most 30 s and gives it 10 s more. At most 45 s of
///   silence once the request was sent (`HTTPClientPool.readTimeout`; before the head too). Waits longer than 30 s are made of several requests.
///   A server that accepts connections but never answers (stopped, hung) fails each call at its
///   deadline with `unavailable`.
/// - **Reconnecting with backoff**: every call is its own request (connections are pooled and
///   reopened as needed). After calls that got no answer, `waitForChanges` first waits a backoff
///   (0.25 s doubling to 5 s, never beyond its timeout) so a follower looping on it does not spin;
///   any answer resets it. The feed resumes from the caller's cursor: the client keeps none.
/// - `containerID` is the ID given at creation (the one a mount recorded, or `fetchInfo`'s). Every
///   request names it (`SyncFS-Container-ID`): a server whose container under the name has
///   another ID (replaced, restored from elsewhere) answers `412`, which is `unavailable` with a
///   message saying so — never a sync against the wrong container.
/// - A chunk answer's plain length is checked against the protocol's limit before anything is
///   allocated for it; an answer that breaks off or exceeds its size limit is `unavailable`.
public final class HTTPContainer: Container {
    public let address: ServerAddress
    public let containerID: String
    private let token: BearerToken
    private let caFile: String?
    private let client: HTTPClient
    private let failures = Mutex(0)
    /// The message of the last call that failed in TLS (`TLSFailure`); nil after any answer.
    let tlsFailure = Mutex<String?>(nil)
    /// The optional endpoints the server serves (the batches), as last asked.
    let features = ServerFeatures()
    /// The role the server grants the token, as last learnt, and who hears of refused changes
    /// (`ContainerAccess`).
    let access = ServerAccess()

    static let requestDeadline: TimeAmount = .seconds(30)
    /// Until the head of a chunk upload's answer: the whole body is sent (up to 16 MiB) first.
    static let chunkDeadline: TimeAmount = .seconds(120)
    /// Until the head of a batch of commits' answer (up to 32 MiB of JSON sent, then applied).
    static let commitBatchDeadline: TimeAmount = .seconds(120)
    /// Until the head of a batch of chunks' answer (up to 32 MiB sent, then checked and stored).
    static let chunkBatchDeadline: TimeAmount = .seconds(240)
    /// Until the head of a chunk read's answer: readers of placeholders wait on it.
    static let chunkReadDeadline: TimeAmount = .seconds(10)
    static let waitGrace: TimeAmount = .seconds(10)
    /// The largest JSON answer read (a page of the change feed with big manifests fits).
    static let maxJSONAnswer = 256 << 20

    /// A container at `address` whose ID is `containerID`. `caFile`: trust only the certificates
    /// in this PEM file (a self-signed server) instead of the system's roots.
    public convenience init(address: ServerAddress, token: String, containerID: String, caFile: String? = nil)
        throws(ClientSetupError)
    {
        try self.init(address: address, token: BearerToken(token), containerID: containerID, caFile: caFile)
    }

    /// As above, with a token that can be replaced when the server refuses it (`BearerToken`).
    public init(address: ServerAddress, token: BearerToken, containerID: String, caFile: String? = nil)
        throws(ClientSetupError)
    {
        self.address = address
        self.token = token
        self.containerID = containerID
        self.caFile = caFile
        self.client = try HTTPClientPool.client(caFile: caFile)
    }

    /// Asks the server which container `address` names (its ID), checking the token on the way.
    public static func fetchInfo(address: ServerAddress, token: String, caFile: String? = nil)
        async throws(HTTPContainerError) -> ContainerInfo
    {
        let probe: HTTPContainer
        do {
            probe = try HTTPContainer(address: address, token: token, containerID: "", caFile: caFile)
        } catch {
            throw .setup(error.description)
        }
        let answer: Answer
        do {
            answer = try await probe.send(.GET, WireProtocol.Path.container(address.name))
        } catch {
            if let tls = probe.tlsFailure.withLock({ $0 }) { throw .tls(tls) }
            throw .unreachable(error.description)
        }
        guard answer.status == 200 else {
            let refusal = WireAnswer.refusal(answer)
            switch refusal.code {
            case .unauthorized?, .forbidden?: throw .refused("the server refused the token: \(refusal.message)")
            case .notFound? where answer.status == 404:
                throw .noContainer("the server has no container '\(address.name)': \(refusal.message)")
            default: throw .unreachable(WireAnswer.failure(answer, address: address).description)
            }
        }
        do {
            return try WireAnswer.decode(ContainerInfo.self, answer, address: address)
        } catch {
            throw .unreachable(error.description)
        }
    }

    // MARK: Container

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        var missing: [ChunkHash] = []
        var start = 0
        repeat {
            let batch = Array(hashes[start..<min(hashes.count, start + WireProtocol.maxMissingCheckHashes)])
            let answer = try await send(
                .POST, WireProtocol.Path.missingChunks(address.name), json: MissingChunksRequest(hashes: batch))
            guard answer.status == 200 else { throw WireAnswer.failure(answer, address: address) }
            missing += try WireAnswer.decode(MissingChunksResponse.self, answer, address: address).missing
            start += batch.count
        } while start < hashes.count
        return missing
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        let answer = try await send(
            .PUT, WireProtocol.Path.chunk(address.name, chunk.hash), body: chunk.payload,
            headers: [
                (WireProtocol.chunkEncodingHeader, WireProtocol.encodingName(chunk.encoding)),
                (WireProtocol.plainLengthHeader, String(chunk.plainLength)),
                ("Content-Type", "application/octet-stream"),
            ], deadline: Self.chunkDeadline)
        guard (200...204).contains(answer.status) else { throw WireAnswer.failure(answer, address: address) }
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        let answer = try await send(
            .GET, WireProtocol.Path.chunk(address.name, hash), deadline: Self.chunkReadDeadline,
            limit: WireProtocol.maxChunkBodyBytes)
        guard answer.status == 200 else {
            if answer.status == 404, WireAnswer.refusal(answer).code == .chunkNotFound { throw .chunkNotFound(hash) }
            throw WireAnswer.failure(answer, address: address)
        }
        guard let encoding = answer.header(WireProtocol.chunkEncodingHeader).flatMap(WireProtocol.encoding(named:)),
            let plainLength = answer.header(WireProtocol.plainLengthHeader).flatMap({ Int($0) }),
            (0...WireProtocol.maxChunkPlainLength).contains(plainLength)
        else {
            throw .unavailable("\(address.origin) sent chunk \(hash) without valid encoding or length headers")
        }
        return EncodedChunk(hash: hash, encoding: encoding, plainLength: plainLength, payload: answer.body)
    }

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        let answer = try await send(.GET, WireProtocol.Path.entry(address.name, id))
        guard answer.status == 200 else {
            if answer.status == 404, WireAnswer.refusal(answer).code == .entryNotFound { return nil }
            throw WireAnswer.failure(answer, address: address)
        }
        return try WireAnswer.decode(RemoteEntry.self, answer, address: address)
    }

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        let answer = try await send(.POST, WireProtocol.Path.commits(address.name), json: request)
        guard answer.status == 200 || answer.status == 409 else { throw WireAnswer.failure(answer, address: address) }
        return try WireAnswer.decode(CommitOutcome.self, answer, address: address)
    }

    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        guard limit > 0 else { throw .invalidRequest("the change feed limit must be positive, not \(limit)") }
        let query = "after=\(WireAnswer.queryEscaped(cursor.token))&limit=\(min(limit, 10_000))"
        let answer = try await send(
            .GET, WireProtocol.Path.changes(address.name) + "?" + query,
            headers: [("Accept", ChangePageFormat.mediaType + ", application/json;q=0.5")])
        guard answer.status == 200 else { throw WireAnswer.failure(answer, address: address) }
        return try WireAnswer.decodeChangePage(answer, address: address)
    }

    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError)
        -> Bool
    {
        let deadline = ContinuousClock.now + timeout
        let backoff = Self.backoff(afterFailures: failures.withLock { $0 })
        if backoff > .zero {
            try? await Task.sleep(for: min(backoff, timeout))
            if Task.isCancelled { return false }
        }
        while true {
            let left = deadline - ContinuousClock.now
            let milliseconds = max(0, min(Int64(WireProtocol.maxWaitMilliseconds), left.milliseconds))
            let query = "after=\(WireAnswer.queryEscaped(cursor.token))&timeout=\(milliseconds)"
            let asked = ContinuousClock.now + .milliseconds(milliseconds)
            let answer: Answer
            do {
                answer = try await send(
                    .GET, WireProtocol.Path.wait(address.name) + "?" + query,
                    deadline: .milliseconds(milliseconds) + Self.waitGrace)
            } catch {
                if Task.isCancelled { return false }
                throw error
            }
            guard answer.status == 200 else { throw WireAnswer.failure(answer, address: address) }
            if try WireAnswer.decode(WaitResponse.self, answer, address: address).changed { return true }
            // "No change" well before the time asked for: the server is stopping; let the caller
            // come back (its next call finds the server gone or restarted) instead of asking again.
            if ContinuousClock.now >= deadline || Task.isCancelled || ContinuousClock.now < asked - .seconds(1) {
                return false
            }
        }
    }

    // MARK: Requests

    /// The pause before the next wait after `failures` calls in a row got no answer.
    static func backoff(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        return min(.milliseconds(250) * (1 << min(failures - 1, 5)), .seconds(5))
    }

    func send<Body: Encodable>(_ method: HTTPMethod, _ path: String, json: Body)
        async throws(ContainerProtocolError) -> Answer
    {
        let body: [UInt8]
        do {
            body = Array(try JSONEncoder().encode(json))
        } catch {
            throw .invalidRequest("cannot encode the request: \(error)")
        }
        return try await send(method, path, body: body, headers: [("Content-Type", "application/json")])
    }

    /// One request with the token; any answer but "busy" is returned (the caller reads the
    /// status). No answer at all is `unavailable`. A busy answer (`503`, `429`) is asked again
    /// after the call's own backoff (`BusyBackoff`: exponential with jitter, at least the server's
    /// `Retry-After`); a call still refused after `BusyBackoff.patience` is `busy`. A `503
    /// storageUnavailable` is not busy but an outage behind the server: returned at once, for
    /// the caller to report (`WireAnswer.failure`) and the mount to show. A refused token (`401`,
    /// `403`) is asked again once, with its replacement if there is one (`BearerToken`).
    func send(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = [],
        deadline: TimeAmount = requestDeadline, limit: Int = maxJSONAnswer
    ) async throws(ContainerProtocolError) -> Answer {
        let started = ContinuousClock.now
        var backoff = BusyBackoff()
        var sent = token.value
        var replacedToken = false
        while true {
            let answer = try await sendOnce(
                method, path, token: sent, body: body, headers: headers, deadline: deadline, limit: limit)
            if answer.status == 401 || answer.status == 403, !replacedToken,
                let replacement = token.replacement(forRefused: sent)
            {
                sent = replacement
                replacedToken = true
                continue
            }
            guard answer.status == 503 || answer.status == 429,
                WireAnswer.refusal(answer).code != .storageUnavailable
            else {
                if answer.status == 403, method != .GET, WireAnswer.refusal(answer).code == .forbidden {
                    access.changeRefused()
                }
                return answer
            }
            let pause = backoff.nextPause(retryAfter: BusyBackoff.retryAfter(answer.header("Retry-After")))
            let waited = ContinuousClock.now - started
            if waited + pause > BusyBackoff.patience || Task.isCancelled {
                let refusal = WireAnswer.refusal(answer)
                throw .busy(
                    "\(address.origin) is busy: it answered \(answer.status) \(backoff.refusals) times in "
                        + "\(waited / .seconds(1) * 10 / 10) s "
                        + "(\(refusal.message))")
            }
            do {
                try await Task.sleep(for: pause)
            } catch {
                throw .busy("\(address.origin) is busy, and the call was cancelled while it waited")
            }
        }
    }

    /// One request, one answer (or `unavailable`).
    private func sendOnce(
        _ method: HTTPMethod, _ path: String, token: String, body: [UInt8]?, headers: [(String, String)],
        deadline: TimeAmount, limit: Int
    ) async throws(ContainerProtocolError) -> Answer {
        var request = HTTPClientRequest(url: address.url(path))
        request.method = method
        request.headers.add(name: "Authorization", value: "\(WireProtocol.authorizationScheme) \(token)")
        if !containerID.isEmpty { request.headers.add(name: WireProtocol.containerIDHeader, value: containerID) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: deadline)
        } catch {
            // Only a call that reached no server counts towards the wait's backoff.
            if !Task.isCancelled { failures.withLock { $0 += 1 } }
            NoAnswerProbe.current?.noteNoAnswer()
            if let tls = TLSFailure.describe(error, origin: address.origin, host: address.host, caFile: caFile) {
                tlsFailure.withLock { $0 = tls }
                throw .unavailable(tls)
            }
            throw .unavailable("no answer from \(address.origin): \(ConnectionFailure.describe(error))")
        }
        failures.withLock { $0 = 0 }
        tlsFailure.withLock { $0 = nil }
        do {
            let buffer = try await response.body.collect(upTo: limit)
            return Answer(
                status: Int(response.status.code), headers: response.headers, body: Array(buffer.readableBytesView))
        } catch {
            NoAnswerProbe.current?.noteNoAnswer()
            throw .unavailable("the answer of \(address.origin) broke off or is over \(limit) bytes: \(error)")
        }
    }
}

/// What `HTTPContainer.fetchInfo` can fail with.
public enum HTTPContainerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The client cannot be set up (an unreadable CA file).
    case setup(String)
    /// No usable answer (network, server down, not this protocol): try again later.
    case unreachable(String)
    /// The server answered no: the token is wrong (unknown, revoked, for another container).
    case refused(String)
    /// The server has no container under this name (a wrong name, or its disk is away).
    case noContainer(String)
    /// The TLS connection failed: its certificate is not trusted, expired or for another host
    /// name (`TLSFailure`: a message saying what to do).
    case tls(String)

    public var description: String {
        switch self {
        case .setup(let message), .unreachable(let message), .refused(let message), .noContainer(let message),
            .tls(let message):
            return message
        }
    }
}

/// One HTTP answer, read whole.
struct Answer: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let body: [UInt8]

    func header(_ name: String) -> String? { headers.first(name: name) }
}

extension Duration {
    fileprivate var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
