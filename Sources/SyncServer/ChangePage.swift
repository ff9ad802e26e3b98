import Foundation
import SyncBackend

/// A `changes` page bounded in bytes as well as in entries: at most `maxBytes` (normally
/// `WireProtocol.maxChangePageBytes`) in its form, JSON or binary (`ChangePageFormat`), except
/// that one entry is always sent, however large.
///
/// The container's cursor stays opaque: a page that would be too large is asked for again with a
/// smaller `limit` (the container then gives the first entries of the same page, with its own
/// cursor and `moreComing`). Each attempt is measured entry by entry and abandoned as soon as it
/// is over the bound, so no more than about `maxBytes` is ever built, however large the entries;
/// the next attempt asks for the entries that fitted (fewer than before, at least one), so a
/// handful of attempts suffice even if commits change the feed meanwhile. A JSON page that may be
/// large is encoded on a Dispatch thread (`Offload`); a binary page costs little to encode.
enum ChangePage {
    /// The body's form: what the request's `Accept` asked for.
    enum Form: Sendable {
        case json
        case binary

        var contentType: String {
            switch self {
            case .json: return "application/json"
            case .binary: return ChangePageFormat.mediaType
            }
        }
    }

    /// The page of at most `limit` entries after `cursor` and its body in `form` (JSON if the
    /// page cannot be encoded in binary; `form` of the result says which).
    static func fetch(
        from container: any Container, after cursor: FeedCursor, limit: Int,
        maxBytes: Int = WireProtocol.maxChangePageBytes, form: Form = .json
    ) async throws(ContainerProtocolError) -> (batch: ChangeBatch, body: Data, form: Form) {
        func json(_ batch: ChangeBatch) async -> Fit {
            let small = estimatedBytes(of: batch) < JSONResponse.offloadedEncodingBytes
            return small ? encode(batch, maxBytes: maxBytes) : await Offload.run { encode(batch, maxBytes: maxBytes) }
        }
        var limit = limit
        var form = form
        while true {
            let batch = try await container.changes(after: cursor, limit: limit)
            var fit = form == .binary ? encodeBinary(batch, maxBytes: maxBytes) : await json(batch)
            if case .unencodable = fit, form == .binary {
                form = .json
                fit = await json(batch)
            }
            switch fit {
            case .fits(let body):
                return (batch, body, form)
            case .tooLarge(let fitting):
                limit = nextLimit(after: limit, returned: batch.entries.count, fitting: fitting)
            case .unencodable:
                throw .storageFailure("cannot encode a page of the change feed")
            }
        }
    }

    /// The limit of the next attempt after a page of `returned` entries (asked with `limit`)
    /// whose first `fitting` entries fit: `fitting`, but at least 1 and always less than before.
    static func nextLimit(after limit: Int, returned: Int, fitting: Int) -> Int {
        max(1, min(fitting, returned - 1, limit - 1))
    }

    enum Fit: Sendable {
        case fits(Data)
        /// Only the first `fitting` entries (perhaps none) fit.
        case tooLarge(fitting: Int)
        /// `JSONEncoder` failed (cannot happen for the protocol's types), or a field is too long
        /// for the binary form's count.
        case unencodable
    }

    /// The binary page of `batch` if it has at most `maxBytes` (or a single entry); else how
    /// many of its entries fit. Sizes are exact, so nothing is encoded that is then dropped.
    static func encodeBinary(_ batch: ChangeBatch, maxBytes: Int) -> Fit {
        if batch.entries.count > 1 {
            var total = ChangePageFormat.envelopeBytes(batch)
            for (index, entry) in batch.entries.enumerated() {
                total += ChangePageFormat.encodedBytes(of: entry)
                if total > maxBytes { return .tooLarge(fitting: index) }
            }
        }
        do {
            return .fits(Data(try ChangePageFormat.encode(batch)))
        } catch {
            return .unencodable
        }
    }

    /// The JSON of `batch` if it has at most `maxBytes` (or a single entry); else how many of its
    /// entries fit. Blocking (CPU): call it off the cooperative pool.
    static func encode(_ batch: ChangeBatch, maxBytes: Int) -> Fit {
        let encoder = JSONEncoder()
        let single = batch.entries.count <= 1
        // Most pages are far below the bound, as a generous estimate shows without encoding
        // them twice; the others are measured entry by entry first.
        if !single, estimatedBytes(of: batch) > maxBytes {
            var total = envelopeBytes(batch)
            for (index, entry) in batch.entries.enumerated() {
                total += ((try? encoder.encode(entry).count) ?? 0) + 1
                if total > maxBytes { return .tooLarge(fitting: index) }
            }
        }
        guard let json = try? encoder.encode(batch) else { return .unencodable }
        if json.count > maxBytes, !single { return .tooLarge(fitting: batch.entries.count - 1) }
        return .fits(json)
    }

    /// `{"entries":[],"cursor":{"token":"…"},"moreComing":false}` and some slack.
    private static func envelopeBytes(_ batch: ChangeBatch) -> Int { 64 + 6 * batch.cursor.token.utf8.count }

    /// An upper bound of the page's JSON size (generous: every byte escaped, every number at its
    /// longest); only decides whether the page is measured before it is encoded whole.
    static func estimatedBytes(of batch: ChangeBatch) -> Int {
        batch.entries.reduce(envelopeBytes(batch)) { $0 + estimatedBytes(of: $1) }
    }

    /// An upper bound of one entry's JSON size.
    static func estimatedBytes(of entry: RemoteEntry) -> Int {
        let state = entry.state
        var total = 512 + 6 * entry.device.utf8.count + 4 * state.name.count + 4 * (state.symlinkTarget?.count ?? 0)
        for (name, value) in state.xattrs { total += 8 + 6 * name.utf8.count + 4 * value.count }
        return total + 128 * state.manifest.count
    }
}
