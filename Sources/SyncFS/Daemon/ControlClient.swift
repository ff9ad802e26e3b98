import Foundation
import Glibc

/// The CLI's side of the control socket (`syncfs-mount sync|status|unmount|events|pin|…`).
///
/// Before it sends anything it checks that the registry is safe (`MountRegistry.checkForClient`:
/// private directories of this user or root) and, once connected, that the process serving the
/// socket runs as this user or as root (`SO_PEERCRED`). A socket planted by another user is never
/// talked to: the command fails with `ControlFailure.unsafe` instead.
public enum ControlClient {
    /// Sends `request` to the daemon serving `mountpoint` and reads its one-line answer.
    public static func ask(_ request: ControlRequest, mountpoint: String) -> Result<ControlReply, ControlFailure> {
        let fd: Int32
        switch connect(mountpoint: mountpoint) {
        case .success(let connected): fd = connected
        case .failure(let failure): return .failure(failure)
        }
        defer { Glibc.close(fd) }
        guard let encoded = try? JSONEncoder().encode(request) else { return .failure(.noDaemon(mountpoint)) }
        // A refusing daemon answers before reading: its `error` line is read even if the write failed.
        _ = ControlServer.writeAll(fd, Array(encoded) + [10])
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            reply.append(contentsOf: chunk[..<count])
        }
        guard let answer = try? JSONDecoder().decode(ControlReply.self, from: Data(reply)) else {
            return .failure(.noDaemon(mountpoint))
        }
        return .success(answer)
    }

    /// Connects, sends `request` and returns the socket for the caller to read (and close).
    public static func openStream(_ request: ControlRequest, mountpoint: String) -> Result<Int32, ControlFailure> {
        let fd: Int32
        switch connect(mountpoint: mountpoint) {
        case .success(let connected): fd = connected
        case .failure(let failure): return .failure(failure)
        }
        guard let encoded = try? JSONEncoder().encode(request), ControlServer.writeAll(fd, Array(encoded) + [10])
        else {
            Glibc.close(fd)
            return .failure(.noDaemon(mountpoint))
        }
        return .success(fd)
    }

    /// A connected socket to the daemon of `mountpoint`, after the registry and peer checks.
    static func connect(mountpoint: String) -> Result<Int32, ControlFailure> {
        switch MountRegistry.checkForClient() {
        case .safe: break
        case .missing: return .failure(.noDaemon(mountpoint))
        case .unsafe(let reason): return .failure(.unsafe(reason))
        }
        let path = MountRegistry.socketPath(for: mountpoint)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.noDaemon(mountpoint)) }
        guard var address = try? ControlAddress.make(path) else {
            Glibc.close(fd)
            return .failure(.noDaemon(mountpoint))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            return .failure(.noDaemon(mountpoint))
        }
        guard let peer = PeerCredentials.uid(of: fd), peer == geteuid() || peer == 0 else {
            let who = PeerCredentials.uid(of: fd).map { "uid \($0)" } ?? "an unknown user"
            Glibc.close(fd)
            return .failure(
                .unsafe("the control socket \(path) is served by \(who), not by uid \(geteuid()) or root; not using it")
            )
        }
        return .success(fd)
    }
}

/// Why the CLI got no answer from a daemon.
public enum ControlFailure: Error, CustomStringConvertible, Sendable {
    /// No daemon of this user serves that mount point.
    case noDaemon(String)
    /// The registry or the socket could belong to another user: refused without talking to it.
    case unsafe(String)

    public var description: String {
        switch self {
        case .noDaemon(let mountpoint): return "no SyncFS daemon answers for \(mountpoint)"
        case .unsafe(let reason): return reason
        }
    }
}

/// The credentials of a Unix socket's peer, as the kernel recorded them at `connect`.
enum PeerCredentials {
    /// The peer's effective uid (`SO_PEERCRED`), or nil if the kernel does not say.
    static func uid(of fd: Int32) -> uid_t? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc's overlay does not import it).
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
            length == socklen_t(MemoryLayout.size(ofValue: credentials))
        else { return nil }
        return credentials.uid
    }
}
