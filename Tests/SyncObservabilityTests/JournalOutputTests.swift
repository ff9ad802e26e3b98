import Foundation
import Logging
import TestSupport
import Testing

@testable import SyncObservability

/// Under systemd, `--log-format json` records reach the journal as its own fields, through a real
/// datagram socket (a test's own, bound where the journal's would be).
@Suite
struct JournalOutputTests {
    /// A datagram socket bound at a new path, and what it receives.
    final class Listener {
        let directory: String
        let path: String
        let socket: Int32

        init() throws {
            directory = try makeTemporaryDirectory("syncfs-journal")
            path = directory + "/socket"
            socket = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            try #require(bound == 0)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        func receive() -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            return count > 0 ? Array(buffer[..<count]) : []
        }

        deinit {
            close(socket)
            unlink(path)
            rmdir(directory)
        }
    }

    /// The fields of a datagram, decoding both encodings.
    static func fields(_ bytes: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == 0x0A || $0 == UInt8(ascii: "=") }) else { break }
            let key = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                let stop = bytes[end...].firstIndex(of: 0x0A) ?? bytes.count
                fields[key] = String(decoding: bytes[(end + 1)..<stop], as: UTF8.self)
                index = stop + 1
            } else {
                var length: UInt64 = 0
                for shift in 0..<8 { length |= UInt64(bytes[end + 1 + shift]) << (8 * UInt64(shift)) }
                let start = end + 9
                fields[key] = String(decoding: bytes[start..<(start + Int(length))], as: UTF8.self)
                index = start + Int(length) + 1
            }
        }
        return fields
    }

    @Test func aRecordReachesTheJournalAsItsOwnFields() throws {
        let listener = try Listener()
        let lines = JSONLogHandlerTests.Lines()
        var handler = JSONLogHandler(
            label: "syncfs-server", level: .debug, journal: JournalOutput(socketPath: listener.path),
            output: lines.append)
        handler[metadataKey: "request-id"] = "7"
        handler.log(
            event: LogEvent(
                level: .warning, message: "two\nlines", metadata: ["duration": "12 ms"], source: "t", file: #file,
                function: #function, line: #line))
        let fields = Self.fields(listener.receive())
        #expect(fields["MESSAGE"] == "two\nlines")
        #expect(fields["PRIORITY"] == "4")
        #expect(fields["SYSLOG_IDENTIFIER"] == "syncfs-mount")
        #expect(fields["SYNCFS_LEVEL"] == "warning")
        #expect(fields["SYNCFS_LABEL"] == "syncfs-server")
        #expect(fields["SYNCFS_META_REQUEST_ID"] == "7")
        #expect(fields["SYNCFS_META_DURATION"] == "12 ms")
        // Sent to the journal, so not written on standard error as well.
        #expect(lines.written.withLock { $0.isEmpty })
    }

    @Test func aJournalThatRefusesTheRecordLeavesItOnStandardError() {
        let lines = JSONLogHandlerTests.Lines()
        let handler = JSONLogHandler(
            label: "syncfs", level: .info, journal: JournalOutput(socketPath: "/nonexistent/journal"),
            output: lines.append)
        handler.log(
            event: LogEvent(
                level: .info, message: "kept", metadata: nil, source: "t", file: #file, function: #function,
                line: #line))
        #expect(lines.written.withLock { $0.count == 1 && $0[0].contains("\"message\":\"kept\"") })
    }

    @Test func theJournalIsUsedOnlyWhenStandardErrorIsItsStream() {
        #expect(JournalOutput.detect(environment: [:]) == nil)
        #expect(JournalOutput.detect(environment: ["JOURNAL_STREAM": "1:2"]) == nil)
        var info = stat()
        fstat(STDERR_FILENO, &info)
        let own = "\(info.st_dev):\(info.st_ino)"
        #expect(JournalOutput.detect(environment: ["JOURNAL_STREAM": own]) != nil)
    }
}
