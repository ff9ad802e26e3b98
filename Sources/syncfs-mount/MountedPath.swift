import Foundation
import Glibc
import SyncFS

/// A path inside a running SyncFS mount: the mount point (whose daemon answers on its control
/// socket) and the path below it.
struct MountedPath {
    let mountpoint: String
    let relative: String

    /// Finds the mount holding `path` (the nearest enclosing directory with a running daemon).
    /// A registry another user could have planted is refused (`MountRegistry.checkForClient`).
    static func resolve(_ path: String) throws(MountError) -> MountedPath {
        if case .unsafe(let reason) = MountRegistry.checkForClient() {
            throw MountError(.permissionDenied, reason)
        }
        let absolute = (absolutePath(path) as NSString).standardizingPath
        for candidate in [absolute, realPath(absolute)].compactMap({ $0 }) {
            var components = candidate.split(separator: "/").map(String.init)
            var below: [String] = []
            while true {
                let prefix = "/" + components.joined(separator: "/")
                if access(MountRegistry.socketPath(for: prefix), F_OK) == 0 {
                    // A socket left by a killed daemon: say so (`DeadMount`) rather than "no daemon".
                    if MountRegistry.daemon(of: prefix) == nil { try DeadMount.check(prefix) }
                    return MountedPath(mountpoint: prefix, relative: below.reversed().joined(separator: "/"))
                }
                guard let last = components.popLast() else { break }
                below.append(last)
            }
        }
        try DeadMount.check(path)
        throw MountError(.badInput, "\(path) is not in a SyncFS mount with a running daemon")
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Sends `command` about this path; throws the daemon's error.
    func ask(_ command: ControlRequest.Command, ignored: Bool? = nil) throws(MountError) -> ControlReply {
        let reply: ControlReply
        var request = ControlRequest(command, path: relative)
        request.ignored = ignored
        switch ControlClient.ask(request, mountpoint: mountpoint) {
        case .success(let answer): reply = answer
        case .failure(.unsafe(let reason)): throw MountError(.permissionDenied, reason)
        case .failure(let failure): throw MountError(.badInput, "\(failure)")
        }
        if let error = reply.error {
            // Retryable (busy, paused): exit 75; anything else is the request's fault.
            throw MountError(reply.retryable == true ? .busy : .badInput, "\(display): \(error)")
        }
        return reply
    }

    var display: String { relative.isEmpty ? mountpoint : mountpoint + "/" + relative }
}
