import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SyncBackend

/// Reading a request strictly: bodies within their limits, JSON that decodes, known query
/// parameters with values in range, single well-formed headers. Every violation is a
/// `WireFailure` (`400 invalidRequest`, or `413 tooLarge` for sizes).
enum RequestReading {
    /// The whole body as `Bytes` (`[UInt8]`, `Data`), at most `limit` bytes: a larger
    /// `Content-Length` is refused before anything is read, a body that turns out larger as soon
    /// as it passes `limit`. The parts are appended as they arrive (no whole-body buffer besides
    /// the result), into room for the declared length but at most `reserve` bytes (a length
    /// declared by a client that then sends slowly, or nothing, costs no more than that).
    static func body<Bytes: RangeReplaceableCollection<UInt8>>(
        of request: Request, limit: Int, reserve: Int = 1 << 20, as _: Bytes.Type = Bytes.self
    ) async throws(WireFailure) -> Bytes {
        var bytes = Bytes()
        if let length = try declaredLength(of: request, limit: limit) { bytes.reserveCapacity(min(length, reserve)) }
        try await parts(of: request, limit: limit) { part throws(WireFailure) in
            bytes.append(contentsOf: part.readableBytesView)
        }
        return bytes
    }

    /// The body's `Content-Length`, if it has one: `400` if it is not a byte count, `413` if it
    /// is over `limit`.
    static func declaredLength(of request: Request, limit: Int) throws(WireFailure) -> Int? {
        guard let declared = try singleHeader(.contentLength, of: request) else { return nil }
        guard let length = Int(declared), length >= 0, declared.utf8.allSatisfy(isDigit) else {
            throw WireFailure(.invalidRequest, "Content-Length '\(declared)' is not a byte count")
        }
        guard length <= limit else { throw tooLarge(limit) }
        return length
    }

    /// Hands the body to `consume` part by part as it arrives, at most `limit` bytes in all (the
    /// checks of `body`; `consume` may refuse it at any part).
    static func parts(
        of request: Request, limit: Int, _ consume: (ByteBuffer) throws(WireFailure) -> Void
    ) async throws(WireFailure) {
        _ = try declaredLength(of: request, limit: limit)
        var received = 0
        do {
            for try await part in request.body {
                guard part.readableBytes <= limit - received else { throw tooLarge(limit) }
                received += part.readableBytes
                try consume(part)
            }
        } catch let failure as WireFailure {
            throw failure
        } catch {
            throw WireFailure(.invalidRequest, "cannot read the request body: \(error)")
        }
    }

    /// Bodies from this size on are decoded off the cooperative pool.
    static let offloadedDecodingBytes = 64 << 10

    /// The body decoded as JSON of type `T` (at most `WireProtocol.maxJSONBodyBytes`); a large
    /// body (a commit of a file with many chunks) is decoded on a Dispatch thread (`Offload`).
    static func json<T: Decodable & Sendable>(_ type: T.Type, from request: Request) async throws(WireFailure) -> T {
        try await decode(type, from: try await body(of: request, limit: WireProtocol.maxJSONBodyBytes, as: Data.self))
    }

    /// A small body (at most `WireProtocol.maxLoginBodyBytes`: a login, an admin's change)
    /// decoded as JSON of type `T`.
    static func smallJSON<T: Decodable & Sendable>(_ type: T.Type, from request: Request) async throws(WireFailure)
        -> T
    {
        try await decode(type, from: try await body(of: request, limit: WireProtocol.maxLoginBodyBytes, as: Data.self))
    }

    /// `data` decoded as JSON of type `T`; large data on a Dispatch thread (`Offload`).
    static func decode<T: Decodable & Sendable>(_ type: T.Type, from data: Data) async throws(WireFailure) -> T {
        let decode = { @Sendable () throws(WireFailure) -> T in
            do {
                return try JSONDecoder().decode(T.self, from: data)
            } catch {
                throw WireFailure(.invalidRequest, "the body is not a valid \(T.self): \(describe(error))")
            }
        }
        if data.count < offloadedDecodingBytes { return try decode() }
        return try await Offload.run(decode)
    }

    /// The query parameters (values percent-decoded), each at most once and each one of `allowed`.
    static func query(of request: Request, allowed: Set<String>) throws(WireFailure) -> [String: String] {
        var parameters: [String: String] = [:]
        for (key, value) in request.uri.queryParameters {
            let key = String(key)
            if key.isEmpty && value.isEmpty { continue }  // a bare `?` or `&&`
            guard allowed.contains(key) else {
                let known = allowed.isEmpty ? "none" : allowed.sorted().joined(separator: ", ")
                throw WireFailure(.invalidRequest, "unknown query parameter '\(key)' (this endpoint takes: \(known))")
            }
            guard parameters[key] == nil else {
                throw WireFailure(.invalidRequest, "the query parameter '\(key)' is given twice")
            }
            parameters[key] = String(value)
        }
        return parameters
    }

    /// A decimal integer parameter in `range` (`fallback` when absent).
    static func integer(
        _ parameters: [String: String], _ name: String, in range: ClosedRange<Int>, default fallback: Int
    ) throws(WireFailure) -> Int {
        guard let text = parameters[name] else { return fallback }
        guard let value = decimal(text), range.contains(value) else {
            throw WireFailure(
                .invalidRequest,
                "the query parameter '\(name)' must be an integer from \(range.lowerBound) to \(range.upperBound), not '\(text)'"
            )
        }
        return value
    }

    /// A header that must appear at most once; nil when absent.
    static func singleHeader(_ name: HTTPField.Name, of request: Request) throws(WireFailure) -> String? {
        let values = request.headers[values: name]
        guard values.count <= 1 else { throw WireFailure(.invalidRequest, "the header \(name) is given twice") }
        return values.first
    }

    /// Plain decimal digits (no sign, no spaces), at most 18 of them; nil otherwise.
    static func decimal(_ text: String) -> Int? {
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy(isDigit) else { return nil }
        return Int(text)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    private static func tooLarge(_ limit: Int) -> WireFailure {
        WireFailure(.tooLarge, "the body is larger than \(limit) bytes")
    }

    /// A decoding error in a sentence: what is wrong, and where.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "" : " at \(keys.joined(separator: "."))"
        }
        switch error {
        case .typeMismatch(let type, let context):
            return "expected \(type)\(path(context)): \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "missing \(type) value\(path(context)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "missing key '\(key.stringValue)'\(path(context))"
        case .dataCorrupted(let context):
            let underlying = context.underlyingError.map { " (\($0))" } ?? ""
            return "\(context.debugDescription)\(path(context))\(underlying)"
        @unknown default:
            return "\(error)"
        }
    }
}
