import Foundation
import Hummingbird

/// A submitted form (`application/x-www-form-urlencoded`), read strictly: at most `limit` bytes,
/// each field at most once (a repeated field is refused: which one counts would be a guess).
struct WebForm: Sendable {
    let fields: [String: String]

    static let limit = 16 << 10

    subscript(_ name: String) -> String? { fields[name] }

    static func read(_ request: Request) async throws(WireFailure) -> WebForm {
        let type = try RequestReading.singleHeader(.contentType, of: request) ?? ""
        guard type.lowercased().hasPrefix("application/x-www-form-urlencoded") else {
            throw WireFailure(.invalidRequest, "a form comes as application/x-www-form-urlencoded")
        }
        let body = try await RequestReading.body(of: request, limit: limit, as: [UInt8].self)
        return try parse(String(decoding: body, as: UTF8.self))
    }

    static func parse(_ text: String) throws(WireFailure) -> WebForm {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else {
                throw WireFailure(.invalidRequest, "the form is not well formed")
            }
            guard fields[name] == nil else { throw WireFailure(.invalidRequest, "the form has '\(name)' twice") }
            fields[name] = value
        }
        return WebForm(fields: fields)
    }

    private static func decode(_ part: Substring) -> String? {
        part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
