import Foundation
import Logging
import Synchronization
import Testing

@testable import SyncObservability

/// `--log-format json`: one object per line, the documented fields, strings escaped.
@Suite
struct JSONLogHandlerTests {
    /// What a handler wrote, line by line.
    final class Lines: Sendable {
        let written = Mutex<[String]>([])
        func append(_ bytes: [UInt8]) { written.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
    }

    @Test func aLineIsOneObjectWithTheDocumentedFields() throws {
        let lines = Lines()
        var handler = JSONLogHandler(label: "syncfs-server", level: .debug, output: lines.append)
        handler[metadataKey: "request"] = "7"
        let logger = Logger(label: "syncfs-server") { _ in handler }
        logger.debug("GET \"/v1/health\"\n\tdone \u{1}", metadata: ["duration": "12 ms", "list": ["a", "b"]])
        logger.trace("below the level")
        let written = lines.written.withLock { $0 }
        #expect(written.count == 1)
        let line = try #require(written.first)
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)
        #expect(
            line.hasPrefix(#"{"time":""#) && line.contains(#"","level":"debug","label":"syncfs-server","message":"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["message"] as? String == "GET \"/v1/health\"\n\tdone \u{1}")
        let metadata = object["metadata"] as? [String: String]
        #expect(metadata == ["duration": "12 ms", "list": #"["a", "b"]"#, "request": "7"])
        let time = try #require(object["time"] as? String)
        #expect(time.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$"#, options: .regularExpression) != nil)
    }

    @Test func noMetadataMeansNoMetadataField() throws {
        let lines = Lines()
        let logger = Logger(label: "syncfs") { label in JSONLogHandler(label: label, output: lines.append) }
        logger.warning("plain")
        let line = try #require(lines.written.withLock { $0.first })
        #expect(line.contains(#""level":"warning","label":"syncfs","message":"plain"}"#) && !line.contains("metadata"))
    }

    @Test func timestampsAreUTCWithMicroseconds() {
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 1_796_053_521.5)) == "2026-11-30T15:45:21.500000Z")
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000000Z")
    }
}
