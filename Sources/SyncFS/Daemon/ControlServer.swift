import Foundation
import Glibc
import SyncBackend
import Synchronization

/// The daemon's control socket: a Unix socket next to its registry file, where
/// `syncfs-mount sync|status|unmount|events|…` ask about and hurry the sync engine.
///
/// Protocol: the client sends one line of JSON (`ControlRequest`); the daemon answers one line of
/// JSON (`ControlReply`) and closes, except `events`, which streams (`EventStream`) until the
/// client or the daemon goes.
///
/// Trust and isolation (doc/CLI.md, "The runtime directory and the control socket"):
/// - the socket is 0600 in a 0700 registry directory (`MountRegistry.prepare`), and each client
///   is checked with `SO_PEERCRED`: only the daemon's own user and root get an answer; anyone else
///   gets one `error` line and is closed;
/// - each connection is served by a thread of its own, at most `maximumConnections` at once
///   (beyond that a client gets an `error` line at once), of which at most `maximumStreams` event
///   streams, so requests always find a thread; a request must arrive within `requestDeadline`
///   seconds and a reply is dropped after `writeDeadline` seconds unread, so an idle or stuck
///   client never delays another. An event stream waits for its reader as long as it lives (a
///   paused pipeline is not cut off); its subscription's bound ends one that falls behind.
public final class ControlServer: @unchecked Sendable {
    /// Connections served at once (requests and event streams together).
    static let maximumConnections = 64
    /// Of these, event streams (the rest stay for requests).
    static let maximumStreams = 48
    /// Seconds a client has to send its request line before it is closed.
    static let requestDeadline: Double = 5
    /// Seconds a reply may wait for a client that does not read it.
    static let writeDeadline: Double = 30

    private let listener: Int32
    /// Accepts connections until `close()` shuts the listener down.
    private let acceptor: Worker
    private let path: String
    private let engine: SyncEngine
    /// The mount's locks, for `status PATH`.
    private let locks: MountLocks?
    private let active = Mutex(0)
    private let streams = Mutex(0)

    /// Binds the socket for `mountpoint` (replacing a stale one) and starts answering. The
    /// registry must have been prepared (`MountRegistry.prepare`).
    init(mountpoint: String, engine: SyncEngine, locks: MountLocks? = nil) throws {
        path = MountRegistry.socketPath(for: mountpoint)
        self.engine = engine
        self.locks = locks
        unlink(path)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listener = listener
        guard listener >= 0 else { throw ControlError("cannot create the control socket") }
        var address = try ControlAddress.make(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, chmod(path, 0o600) == 0, listen(listener, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(listener)
            unlink(path)
            throw ControlError("cannot bind \(path): \(reason)")
        }
        acceptor = Worker("syncfs-control", wake: { [listener] in shutdown(listener, Int32(SHUT_RDWR)) })
        acceptor.start { [self] worker in serve(worker) }
    }

    private func serve(_ worker: Worker) {
        while !worker.isStopping {
            let client = accept(listener, nil, nil)
            if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE {
                    // Out of descriptors: a pause before the next try (a stop ends it).
                    if errno != EINTR { worker.sleep(for: .milliseconds(10)) }
                    continue
                }
                return
            }
            Self.setTimeout(client, SO_SNDTIMEO, Self.writeDeadline)
            if let refusal = admit(client) {
                Self.refuse(client, refusal)
                continue
            }
            // Not joined at close: a connection ends by its own deadlines (see the header).
            Worker.start("syncfs-control-client") { [self] _ in
                defer { active.withLock { $0 -= 1 } }
                if handle(client) { Glibc.close(client) }
            }
        }
    }

    /// Nil if `client` may be served (and counts it), else why not.
    private func admit(_ client: Int32) -> String? {
        let me = geteuid()
        let peer = PeerCredentials.uid(of: client)
        guard peer == me || peer == 0 else {
            let who = peer.map { "uid \($0)" } ?? "an unknown user"
            return "not allowed: this SyncFS daemon answers only \(me == 0 ? "root" : "uid \(me) and root"), not \(who)"
        }
        let admitted = active.withLock { count in
            guard count < Self.maximumConnections else { return false }
            count += 1
            return true
        }
        return admitted ? nil : "busy: \(Self.maximumConnections) control connections are open; try again"
    }

    /// Answers one `error` line (without waiting for a request), retryable (the server is busy,
    /// exit 75), and closes.
    private static func refuse(_ client: Int32, _ reason: String) {
        if let data = try? JSONEncoder().encode(ControlReply(error: reason, retryable: true)) {
            _ = writeAll(client, Array(data) + [10])
        }
        Glibc.close(client)
    }

    /// Answers one request; returns false if the connection became an event stream (closed by it).
    private func handle(_ client: Int32) -> Bool {
        Self.setTimeout(client, SO_RCVTIMEO, Self.requestDeadline)
        let deadline = Date().addingTimeInterval(Self.requestDeadline)
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !line.contains(10) && line.count < 1 << 20 && Date() < deadline {
            let count = read(client, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            line.append(contentsOf: buffer[..<count])
        }
        guard line.contains(10) else { return true }  // idle, stuck or gone: closed without a word
        let reply: ControlReply
        if let request = try? JSONDecoder().decode(ControlRequest.self, from: Data(line.prefix { $0 != 10 })) {
            if request.command == .events {
                let admitted = streams.withLock { count in
                    guard count < Self.maximumStreams else { return false }
                    count += 1
                    return true
                }
                if admitted {
                    defer { streams.withLock { $0 -= 1 } }
                    Self.setTimeout(client, SO_SNDTIMEO, 0)
                    EventStream.run(client, request: request, fileSystem: engine.fileSystem)
                    return false
                }
                reply = ControlReply(error: "busy: \(Self.maximumStreams) event streams are open; try again")
            } else {
                reply = ControlCommands(engine: engine, locks: locks).answer(request)
            }
        } else {
            reply = ControlReply(error: "malformed request")
        }
        guard let data = try? JSONEncoder().encode(reply) else { return true }
        _ = Self.writeAll(client, Array(data) + [10])
        return true
    }

    /// Sets a receive or send timeout on a socket.
    private static func setTimeout(_ fd: Int32, _ option: Int32, _ seconds: Double) {
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        _ = setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Writes every byte to a socket; false if the peer is gone (or stopped reading past the send
    /// timeout). Never raises SIGPIPE (`MSG_NOSIGNAL`): a peer that closed early is an answer.
    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            written += count
        }
        return true
    }

    /// Stops answering, ends the event streams and removes the socket.
    public func close() {
        engine.fileSystem.changeEvents.closeAll()
        // The accept loop ends before the descriptor is closed (and could be reused).
        acceptor.stop()
        acceptor.join(within: .seconds(5))
        Glibc.close(listener)
        unlink(path)
    }

    /// Sends `request` to the daemon serving `mountpoint`; nil if none answers (or it is not
    /// trusted: see `ControlClient`, which says why).
    public static func ask(_ request: ControlRequest, mountpoint: String) -> ControlReply? {
        try? ControlClient.ask(request, mountpoint: mountpoint).get()
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
