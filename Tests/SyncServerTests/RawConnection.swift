import Foundation
import Glibc

/// A plain TCP connection to 127.0.0.1 for tests that must misbehave the way a hostile client
/// does (send a request head and then a byte now and then, or nothing at all). Closed by
/// `close()` or when released.
final class RawConnection: @unchecked Sendable {
    private(set) var descriptor: Int32

    init(port: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw TestFailure("connect: \(String(cString: strerror(errno)))")
        }
        descriptor = fd
    }

    deinit { close() }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Sends all of `bytes`; false if the connection is gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// What the server sent until it closed the connection, or until `timeout` passed (then
    /// `closed` is false).
    func readUntilClosed(timeout: Duration) -> (bytes: [UInt8], closed: Bool) {
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return (bytes, false) }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(1, left / .milliseconds(1))))
            if ready <= 0 { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return (bytes, true) }
            bytes += buffer[0..<count]
        }
    }

    /// Whether the server has closed the connection (without waiting).
    /// Whether something can be read now without waiting: bytes of an answer, or the end.
    var isReadable: Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) > 0
    }

    var isClosedByServer: Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
            || poller.revents & Int16(POLLHUP | POLLERR) != 0
    }

    /// The head of a `PUT` of a chunk to `container` declaring `length` body bytes.
    static func chunkPutHead(container: String, token: String, hash: String, length: Int) -> String {
        "PUT /v1/containers/\(container)/chunks/\(hash) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Authorization: Bearer \(token)\r\nSyncFS-Chunk-Encoding: raw\r\n"
            + "SyncFS-Plain-Length: \(length)\r\nContent-Length: \(length)\r\n\r\n"
    }
}
