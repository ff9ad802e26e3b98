import Foundation
import SyncBackend

/// Batches over HTTP (`POST .../commits/batch`, `.../commits/all-or-nothing`, `POST
/// .../chunks/batch`; doc/PROTOCOL.md "Batches").
///
/// Contract, beyond `Container`'s and `HTTPContainer`'s:
/// - The batch's shape is checked before anything is sent (`CommitBatch.check`; a batch of
///   commits whose JSON is over `WireProtocol.maxJSONBodyBytes`, or a chunk over the protocol's
///   limits, is `invalidRequest`: the caller makes smaller batches). An empty batch sends nothing.
/// - A batch endpoint is used only when the server lists it in `ContainerInfo.features`
///   (`ServerFeatures`, asked once). A server that does not (older than batches), or whose
///   batch endpoint answers as an older server's would (this protocol's `404 notFound` or `405
///   methodNotAllowed`), gets one call per change or chunk (`commitOneByOne`,
///   `putChunksOneByOne`): the same outcomes, but not atomic — a failure part-way leaves the
///   changes before it committed, and the call throws.
/// - Every answer to a batch of commits is checked whole (`CommitBatchAnswerValidation`: one
///   outcome per change, each about its own change; `AllOrNothingAnswerValidation`); an answer
///   that breaks a rule or does not decode is `unavailable` (the server is not speaking this
///   protocol).
/// - All or nothing (`POST .../commits/all-or-nothing`) has no fallback: against a server that
///   does not list it, the call is `invalidRequest` (nothing sent; the server must be upgraded).
extension HTTPContainer {
    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try CommitBatch.check(requests)
        guard !requests.isEmpty else { return [] }
        guard try await offers(WireProtocol.Feature.commitBatch) else { return try await commitOneByOne(requests) }
        let body = try Self.batchBody(requests)
        let answer = try await send(
            .POST, WireProtocol.Path.commitBatch(address.name), body: body,
            headers: [("Content-Type", "application/json")], deadline: Self.commitBatchDeadline)
        if Self.isFromOlderServer(answer) {
            features.forget()
            return try await commitOneByOne(requests)
        }
        guard answer.status == 200 else { throw WireAnswer.failure(answer, address: address) }
        let outcomes = try WireAnswer.decode(CommitBatchResponse.self, answer, address: address).outcomes
        if let problem = CommitBatchAnswerValidation.problem(with: outcomes, answering: requests) {
            throw .unavailable("\(address.origin) answered a batch of commits against the protocol: \(problem)")
        }
        return outcomes
    }

    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        try CommitBatch.check(requests)
        guard !requests.isEmpty else { return .committed([]) }
        guard try await offers(WireProtocol.Feature.commitAllOrNothing) else {
            throw .invalidRequest(
                "\(address.origin) does not commit all or nothing (it does not list "
                    + "\(WireProtocol.Feature.commitAllOrNothing)): upgrade the server")
        }
        let body = try Self.batchBody(requests)
        let answer = try await send(
            .POST, WireProtocol.Path.commitAllOrNothing(address.name), body: body,
            headers: [("Content-Type", "application/json")], deadline: Self.commitBatchDeadline)
        if Self.isFromOlderServer(answer) {
            features.forget()
            throw .unavailable(
                "\(address.origin) listed all-or-nothing commits but answered as a server without them")
        }
        guard answer.status == 200 else { throw WireAnswer.failure(answer, address: address) }
        let outcome = try WireAnswer.decode(AllOrNothingOutcome.self, answer, address: address)
        if let problem = AllOrNothingAnswerValidation.problem(with: outcome, answering: requests) {
            throw .unavailable("\(address.origin) answered an all-or-nothing commit against the protocol: \(problem)")
        }
        return outcome
    }

    /// The JSON body of a batch of commits; `invalidRequest` over `WireProtocol.maxJSONBodyBytes`.
    private static func batchBody(_ requests: [CommitRequest]) throws(ContainerProtocolError) -> [UInt8] {
        let body: Data
        do {
            body = try JSONEncoder().encode(CommitBatchRequest(changes: requests))
        } catch {
            throw .invalidRequest("cannot encode the batch: \(error)")
        }
        guard body.count <= WireProtocol.maxJSONBodyBytes else {
            throw .invalidRequest(
                "a batch of \(requests.count) changes takes \(body.count) bytes of JSON; at most "
                    + "\(WireProtocol.maxJSONBodyBytes): send fewer changes at once")
        }
        return Array(body)
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        let body = try ChunkBatchFormat.encode(chunks)
        guard !chunks.isEmpty else { return }
        guard try await offers(WireProtocol.Feature.chunkBatch) else { return try await putChunksOneByOne(chunks) }
        let answer = try await send(
            .POST, WireProtocol.Path.chunkBatch(address.name), body: body,
            headers: [("Content-Type", "application/octet-stream")], deadline: Self.chunkBatchDeadline)
        if Self.isFromOlderServer(answer) {
            features.forget()
            return try await putChunksOneByOne(chunks)
        }
        guard (200...204).contains(answer.status) else { throw WireAnswer.failure(answer, address: address) }
    }

    /// Whether the server serves `feature`: as last asked (`ServerFeatures`), else asked now.
    func offers(_ feature: String) async throws(ContainerProtocolError) -> Bool {
        if let known = features.offers(feature) { return known }
        let answer = try await send(.GET, WireProtocol.Path.container(address.name))
        guard answer.status == 200 else { throw WireAnswer.failure(answer, address: address) }
        let info = try WireAnswer.decode(ContainerInfo.self, answer, address: address)
        features.remember(info.features)
        access.remember(info)
        return info.features?.contains(feature) == true
    }

    /// This protocol's answer to a path or method the server does not serve: a server older than
    /// the endpoint (a proxy's page is not this protocol's, and stays `unavailable`).
    private static func isFromOlderServer(_ answer: Answer) -> Bool {
        let code = WireAnswer.refusal(answer).code
        return (answer.status == 404 && code == .notFound) || (answer.status == 405 && code == .methodNotAllowed)
    }
}
