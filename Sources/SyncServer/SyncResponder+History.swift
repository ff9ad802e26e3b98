import Foundation
import Hummingbird
import SyncBackend

/// `GET .../entries/ID/versions` and `GET .../trash`: a container's version history
/// (`ContainerHistory`), read-only, for the container's own tokens (the same checks as every
/// other container endpoint run first). A container whose backend keeps no history answers `501
/// notImplemented`.
extension SyncResponder {
    /// The versions of one entry, newest first: `limit` (`HistoryPage.limits`, default
    /// `WireProtocol.defaultHistoryLimit`); an ID that never existed has none (`200`, empty).
    func history(_ call: Call) async throws(WireFailure) -> Response {
        let text = call.captures["ID"] ?? ""
        guard let id = FileID(hex: text) else {
            throw WireFailure(.invalidRequest, "'\(text)' is not an entry ID (32 lowercase hex digits)")
        }
        let limit = try Self.historyLimit(call)
        let history = try Self.history(of: call)
        let json = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await HistoryPageJSON.fetch(limit: limit) { limit throws(ContainerProtocolError) in
                try await history.history(of: id, limit: limit)
            }
        }
        return JSONResponse.json(json, status: 200)
    }

    /// The deleted entries, newest deletion first, those below `before` (a version,
    /// `HistoryAnswerValidation.beforeRange`; absent: from the newest).
    func trash(_ call: Call) async throws(WireFailure) -> Response {
        let limit = try Self.historyLimit(call)
        var before: EntryVersion?
        if let text = call.query[WireProtocol.Query.before] {
            let range = HistoryAnswerValidation.beforeRange
            let digits = text.utf8.count <= 19 && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
            guard digits, let value = EntryVersion(text), range.contains(value) else {
                throw WireFailure(
                    .invalidRequest,
                    "the query parameter 'before' must be a version from \(range.lowerBound) to "
                        + "\(range.upperBound), not '\(text)'")
            }
            before = value
        }
        let history = try Self.history(of: call)
        let json = try await WireFailure.translating { () async throws(ContainerProtocolError) in
            try await HistoryPageJSON.fetch(limit: limit) { limit throws(ContainerProtocolError) in
                try await history.deletedEntries(before: before, limit: limit)
            }
        }
        return JSONResponse.json(json, status: 200)
    }

    private static func historyLimit(_ call: Call) throws(WireFailure) -> Int {
        try RequestReading.integer(
            call.query, WireProtocol.Query.limit, in: HistoryPage.limits, default: WireProtocol.defaultHistoryLimit)
    }

    /// The container's history, or `501` when its backend keeps none.
    private static func history(of call: Call) throws(WireFailure) -> any ContainerHistory {
        guard let history = call.container as? any ContainerHistory else {
            throw WireFailure(
                .notImplemented, "the container '\(call.name)' keeps no version history on this server")
        }
        return history
    }
}

/// A history or trash page (`HistoryResponse`) bounded in bytes as well as in versions: at most
/// `maxBytes` of JSON (normally `WireProtocol.maxHistoryPageBytes`), except that one version is
/// always sent, however large. A page that would be larger is asked for again with a smaller
/// `limit` (both calls list newest first, so that gives the page's first versions), and
/// `moreComing` is set. Large pages are encoded on a Dispatch thread (`Offload`).
enum HistoryPageJSON {
    static func fetch(
        limit: Int, maxBytes: Int = WireProtocol.maxHistoryPageBytes,
        _ read: (Int) async throws(ContainerProtocolError) -> [HistoricVersion]
    ) async throws(ContainerProtocolError) -> Data {
        var limit = limit
        var cut = false
        while true {
            let versions = try await read(limit)
            let page = HistoryResponse(versions: Array(versions.prefix(limit)), moreComing: cut)
            let small = estimatedBytes(of: page) < JSONResponse.offloadedEncodingBytes
            let fit = small ? encode(page, maxBytes: maxBytes) : await Offload.run { encode(page, maxBytes: maxBytes) }
            switch fit {
            case .fits(let json):
                return json
            case .tooLarge(let fitting):
                limit = ChangePage.nextLimit(after: limit, returned: page.versions.count, fitting: fitting)
                cut = true
            case .unencodable:
                throw .storageFailure("cannot encode a page of the version history")
            }
        }
    }

    /// The JSON of `page` if it has at most `maxBytes` (or a single version); else how many of its
    /// versions fit. Blocking (CPU): call it off the cooperative pool for large pages.
    static func encode(_ page: HistoryResponse, maxBytes: Int) -> ChangePage.Fit {
        let encoder = JSONEncoder()
        let single = page.versions.count <= 1
        if !single, estimatedBytes(of: page) > maxBytes {
            var total = 64
            for (index, version) in page.versions.enumerated() {
                total += ((try? encoder.encode(version).count) ?? 0) + 1
                if total > maxBytes { return .tooLarge(fitting: index) }
            }
        }
        guard let json = try? encoder.encode(page) else { return .unencodable }
        if json.count > maxBytes, !single { return .tooLarge(fitting: page.versions.count - 1) }
        return .fits(json)
    }

    /// An upper bound of the page's JSON size.
    static func estimatedBytes(of page: HistoryResponse) -> Int {
        page.versions.reduce(64) { $0 + 96 + ChangePage.estimatedBytes(of: $1.entry) }
    }
}
