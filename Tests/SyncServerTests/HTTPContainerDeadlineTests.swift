import Foundation
import Glibc
import SyncBackend
import SyncClient
import Testing

/// A server that accepts connections and never answers (stopped with SIGSTOP, hung): every
/// `HTTPContainer` call ends at its deadline as `unavailable` (doc/SEMANTICS.md,
/// "A server that does not answer"). A chunk read — what readers of placeholders wait on — gives
/// up at 10 s, not at the 120 s of an upload.
@Suite("HTTPContainer: a server that never answers")
struct HTTPContainerDeadlineTests {
    @Test(.timeLimit(.minutes(3))) func aChunkReadFromAServerThatNeverAnswersEndsAtItsDeadline() async throws {
        let listener = try SilentListener()
        defer { listener.stop() }
        let container = try HTTPContainer(
            address: try ServerAddress(parsing: "http://127.0.0.1:\(listener.port)/box"), token: "sfs_x",
            containerID: "id")
        let started = ContinuousClock.now
        let hash = try #require(ChunkHash(bytes: Array(repeating: 4, count: 32)))
        var error: ContainerProtocolError?
        do {
            _ = try await container.chunk(hash)
        } catch let failure {
            error = failure
        }
        let elapsed = ContinuousClock.now - started
        if case .unavailable? = error {
        } else {
            Issue.record("expected unavailable, got \(String(describing: error))")
        }
        // It waited for an answer (the connection was taken), then gave up at the chunk deadline.
        #expect(elapsed >= .seconds(9), "it ended after \(elapsed): not at the deadline")
        #expect(elapsed < .seconds(40), "a chunk read waited \(elapsed) for a server that never answers")
    }
}

/// A TCP socket on 127.0.0.1 that listens and never accepts: the kernel completes connections
/// (into the backlog) and takes the requests, and nothing ever answers — what a client sees of a
/// stopped server.
final class SilentListener: @unchecked Sendable {
    let port: Int
    private let socketFD: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw CannedServerError()
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        socketFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func stop() { close(socketFD) }
}
