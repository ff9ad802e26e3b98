import SyncBackend

/// A server's version history (`GET .../entries/ID/versions`, `GET .../trash`; doc/PROTOCOL.md
/// "Version history and the trash").
///
/// Contract, beyond `ContainerHistory`'s and `HTTPContainer`'s:
/// - Arguments are checked before anything is sent (`HistoryPage.size`: `invalidRequest`);
///   `before: 0` lists nothing without asking.
/// - Every answer is checked whole (`HistoryAnswerValidation`: valid entries of the ID asked,
///   tombstones below `before`, newest first, within `limit`) and bounded in size
///   (`maxHistoryAnswer`); an answer that breaks the rules or does not decode is `unavailable`.
/// - A server whose container keeps no history answers `501`: `invalidRequest` with its message
///   (asking again cannot help). A `404` stays `unavailable` (it may be a container gone for
///   now), its message saying that a server older than history answers so too.
/// - The server cuts a page at 16 MiB of JSON (`moreComing`): the trash is then read on in further
///   requests until `limit`; an entry's history lists only the newest versions that fit.
extension HTTPContainer: ContainerHistory {
    /// The largest history answer read: a page is cut at `maxHistoryPageBytes` unless it is a
    /// single version, whose JSON is about as large as the commit that made it.
    static let maxHistoryAnswer = WireProtocol.maxHistoryPageBytes + WireProtocol.maxJSONBodyBytes + (1 << 20)

    public func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        let limit = try HistoryPage.size(limit)
        let page = try await historyPage(
            WireProtocol.Path.versions(address.name, id) + "?\(WireProtocol.Query.limit)=\(limit)")
        if let problem = HistoryAnswerValidation.problem(withHistory: page.versions, of: id, limit: limit) {
            throw .unavailable("\(address.origin) sent a history of \(id) that breaks the protocol: \(problem)")
        }
        return page.versions
    }

    public func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError)
        -> [HistoricVersion]
    {
        let limit = try HistoryPage.size(limit)
        if before == 0 { return [] }
        // No version is above 2^63 - 1: below a larger one is below none.
        var before = before.flatMap { HistoryAnswerValidation.beforeRange.contains($0) ? $0 : nil }
        var found: [HistoricVersion] = []
        while found.count < limit {
            var query = "\(WireProtocol.Query.limit)=\(limit - found.count)"
            if let before { query += "&\(WireProtocol.Query.before)=\(before)" }
            let page = try await historyPage(WireProtocol.Path.trash(address.name) + "?" + query)
            if let problem = HistoryAnswerValidation.problem(
                withTrash: found + page.versions, before: nil, limit: limit)
                ?? HistoryAnswerValidation.problem(withTrash: page.versions, before: before, limit: limit - found.count)
            {
                throw .unavailable("\(address.origin) sent a trash page that breaks the protocol: \(problem)")
            }
            found += page.versions
            guard page.moreComing, let last = page.versions.last else { break }
            before = last.entry.version
        }
        return found
    }

    private func historyPage(_ target: String) async throws(ContainerProtocolError) -> HistoryResponse {
        let answer = try await send(.GET, target, limit: Self.maxHistoryAnswer)
        guard answer.status == 200 else {
            let failure = WireAnswer.failure(answer, address: address)
            if answer.status == 404, case .unavailable(let message) = failure {
                // A server from before version history knows no such endpoint (`notFound` too).
                throw .unavailable(message + " (a server older than version history answers so as well)")
            }
            throw failure
        }
        return try WireAnswer.decode(HistoryResponse.self, answer, address: address)
    }
}
