import Foundation
import Glibc
import Logging
import SyncFS
import Synchronization

/// Reading a mount's token file again when the server refuses its token (doc/SECURITY.md,
/// "A mount's token file"): a revoked token replaced in the same file is taken without a remount.
///
/// The file is opened anew each time (one replaced by a rename counts) and its token used only if
/// the opened file is one this mount may trust: a regular file owned by this user or root that
/// no one else can write. One that others can read is used with the warning a mount gives. The
/// token is its first line, whitespace trimmed, as at mount time. Taking a new token is logged;
/// a file that cannot be used is logged once per problem, not at every refusal.
enum TokenFileReload {
    /// The `BearerToken` reload for `path`: a token other than `refused`, or nil.
    static func reloader(_ path: String, logger: Logger) -> @Sendable (_ refused: String) -> String? {
        let lastProblem = Mutex<String?>(nil)
        return { refused in
            switch read(path) {
            case .success(let token):
                lastProblem.withLock { $0 = nil }
                guard token != refused else { return nil }
                logger.notice("the server refused the token: read the token file \(path) again, using its new token")
                if let warning = ServerContainer.tokenFileWarning(path) { logger.warning("\(warning)") }
                return token
            case .failure(let problem):
                let isNew = lastProblem.withLock { last in
                    defer { last = problem.description }
                    return last != problem.description
                }
                if isNew {
                    logger.warning(
                        "the server refused the token, and the token file \(path) cannot be read again: \(problem)")
                }
                return nil
            }
        }
    }

    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// The token in `path`, read through one descriptor that is checked before it is read.
    static func read(_ path: String) -> Result<String, Problem> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { return .failure(Problem(description: String(cString: strerror(errno)))) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return .failure(Problem(description: String(cString: strerror(errno)))) }
        if let problem = problem(status) { return .failure(problem) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return .failure(Problem(description: String(cString: strerror(errno)))) }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard !token.isEmpty else { return .failure(Problem(description: "it is empty")) }
        return .success(token)
    }

    /// Why a file with `status` cannot be trusted for a token, or nil.
    private static func problem(_ status: stat) -> Problem? {
        guard status.st_mode & S_IFMT == S_IFREG else { return Problem(description: "it is not a regular file") }
        guard status.st_uid == geteuid() || status.st_uid == 0 else {
            return Problem(description: "it belongs to user \(status.st_uid), not to this user or root")
        }
        guard status.st_mode & 0o022 == 0 else {
            return Problem(
                description: "others can write it (mode \(String(status.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        return nil
    }
}
