import Foundation
import Glibc

/// The daemon's control socket: a Unix socket next to its registry file, where
/// `syncfs-mount sync|status|unmount` ask about and hurry the sync engine.
///
/// Protocol: the client sends one line of JSON (`ControlRequest`); the daemon answers one line of
/// JSON (`ControlReply`) and closes. Requests are answered one at a time, except `events`, which
/// is streamed by a thread of its own (`EventStream`) until the client or the daemon goes.
public final class ControlServer: @unchecked Sendable {
    private let listener: Int32
    private let path: String
    private let engine: SyncEngine

    /// Binds the socket for `mountpoint` (replacing a stale one) and starts answering.
    public init(mountpoint: String, engine: SyncEngine) throws {
        path = MountRegistry.socketPath(for: mountpoint)
        self.engine = engine
        unlink(path)
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw ControlError("cannot create the control socket") }
        var address = try ControlAddress.make(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(listener, 8) == 0 else {
            Glibc.close(listener)
            throw ControlError("cannot bind \(path): \(String(cString: strerror(errno)))")
        }
        let thread = Thread { [self] in serve() }
        thread.name = "syncfs-control"
        thread.start()
    }

    private func serve() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            if handle(client) { Glibc.close(client) }
        }
    }

    /// Answers one request; returns false if the connection was handed to an event stream.
    private func handle(_ client: Int32) -> Bool {
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !line.contains(10) && line.count < 1 << 20 {
            let count = read(client, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            line.append(contentsOf: buffer[..<count])
        }
        let reply: ControlReply
        if let request = try? JSONDecoder().decode(ControlRequest.self, from: Data(line.prefix { $0 != 10 })) {
            if request.command == .events {
                EventStream.start(client, request: request, events: engine.fileSystem.changeEvents)
                return false
            }
            reply = ControlCommands(engine: engine).answer(request)
        } else {
            reply = ControlReply(error: "malformed request")
        }
        guard let data = try? JSONEncoder().encode(reply) else { return true }
        _ = Self.writeAll(client, Array(data) + [10])
        return true
    }

    /// Writes every byte; false if the peer is gone.
    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            written += count
        }
        return true
    }

    /// Stops answering, ends the event streams and removes the socket.
    public func close() {
        engine.fileSystem.changeEvents.closeAll()
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        unlink(path)
    }

    /// Sends `request` to the daemon serving `mountpoint`; nil if none answers.
    public static func ask(_ request: ControlRequest, mountpoint: String) -> ControlReply? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        guard var address = try? ControlAddress.make(MountRegistry.socketPath(for: mountpoint)) else { return nil }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0, let encoded = try? JSONEncoder().encode(request) else { return nil }
        let line = Array(encoded) + [10]
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            reply.append(contentsOf: chunk[..<count])
        }
        return try? JSONDecoder().decode(ControlReply.self, from: Data(reply))
    }

    /// Connects to the daemon serving `mountpoint` and sends `request`; returns the connected
    /// socket (the caller reads the answer and closes it), or nil if no daemon answers.
    public static func openStream(_ request: ControlRequest, mountpoint: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard var address = try? ControlAddress.make(MountRegistry.socketPath(for: mountpoint)) else {
            Glibc.close(fd)
            return nil
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0, let encoded = try? JSONEncoder().encode(request), writeAll(fd, Array(encoded) + [10])
        else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }

    /// The mount's sync status (`status`, or `sync` which first expedites the queue).
    public static func ask(_ command: String, mountpoint: String) -> SyncStatus? {
        let request = ControlRequest(command == "sync" ? .sync : .status)
        return ask(request, mountpoint: mountpoint)?.status
    }
}

struct ControlError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

enum ControlAddress {
    static func make(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { throw ControlError("control socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}
