import Foundation
import Glibc
import SyncBackend
import SyncClient
import SyncServer
import Synchronization
import TestSupport
import Testing

/// `HTTPContainer`'s own promises, beyond the conformance suite (which runs it against a real
/// server in SyncBackendTests): unreachable is never "deleted", answers that are not this
/// protocol's are `unavailable`, a revoked token makes the container `unavailable` (not empty),
/// waits back off after failures, a chunk answer claiming an absurd plain length is refused
/// before anything is allocated, and a container-ID mismatch is `unavailable`.
@Suite("HTTPContainer: unreachable is never deleted")
struct HTTPContainerTests {
    @Test func aServerThatIsNotThereIsUnavailableNeverDeleted() async throws {
        let port = try CannedHTTPServer.unusedPort()
        let container = try HTTPContainer(
            address: try ServerAddress(parsing: "http://127.0.0.1:\(port)/box"), token: "sfs_x", containerID: "id")
        let error = await capture { _ = try await container.entry(FileID.random()) }
        #expect(error?.isRetryable == true, "\(String(describing: error))")
        if case .unavailable? = error {} else { Issue.record("expected unavailable, got \(String(describing: error))") }
        #expect(await capture { _ = try await container.changes(after: .beginning, limit: 10) }?.isRetryable == true)
        #expect(
            await capture { _ = try await container.chunk(ChunkHash(bytes: Array(repeating: 1, count: 32))!) }?
                .isRetryable == true)

        // After failures, a wait backs off (it does not spin) and then reports the failure.
        let started = ContinuousClock.now
        let waitError = await capture {
            _ = try await container.waitForChanges(after: .beginning, timeout: .seconds(5))
        }
        #expect(waitError?.isRetryable == true)
        #expect(ContinuousClock.now - started >= .milliseconds(200), "the wait did not back off after failures")
    }

    @Test(arguments: [
        "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 9\r\n\r\nnot found",
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 6\r\n\r\n<html>",
        "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    ])
    func answersThatAreNotThisProtocolsAreUnavailable(canned: String) async throws {
        let server = try CannedHTTPServer(response: canned)
        defer { server.stop() }
        let container = try HTTPContainer(
            address: try ServerAddress(parsing: "http://127.0.0.1:\(server.port)/box"), token: "sfs_x",
            containerID: "id")
        // A proxy's 404 page must not read as "this entry never existed" (nor as a missing chunk).
        let entryError = await capture { _ = try await container.entry(FileID.random()) }
        if case .unavailable? = entryError {
        } else {
            Issue.record("entry: expected unavailable, got \(String(describing: entryError))")
        }
        let chunkError = await capture {
            _ = try await container.chunk(ChunkHash(bytes: Array(repeating: 2, count: 32))!)
        }
        if case .unavailable? = chunkError {
        } else {
            Issue.record("chunk: expected unavailable, got \(String(describing: chunkError))")
        }
        let commitError = await capture {
            _ = try await container.commit(CommitRequest(id: .random(), baseVersion: 0, change: .delete, device: "d"))
        }
        #expect(commitError?.isRetryable == true, "\(String(describing: commitError))")
    }

    @Test func anAbsurdChunkLengthOrAContainerMismatchIsUnavailable() async throws {
        let hash = ChunkHash(bytes: Array(repeating: 3, count: 32))!
        let huge = try CannedHTTPServer(
            response: "HTTP/1.1 200 OK\r\nSyncFS-Chunk-Encoding: zlib\r\nSyncFS-Plain-Length: 99999999999\r\n"
                + "Content-Length: 4\r\n\r\nabcd")
        defer { huge.stop() }
        let container = try HTTPContainer(
            address: try ServerAddress(parsing: "http://127.0.0.1:\(huge.port)/box"), token: "sfs_x", containerID: "id")
        let error = await capture { _ = try await container.chunk(hash) }
        if case .unavailable? = error {} else { Issue.record("expected unavailable, got \(String(describing: error))") }

        let body = #"{"error":"containerMismatch","message":"this is container B, not A"}"#
        let mismatch = try CannedHTTPServer(
            response: "HTTP/1.1 412 Precondition Failed\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        defer { mismatch.stop() }
        let other = try HTTPContainer(
            address: try ServerAddress(parsing: "http://127.0.0.1:\(mismatch.port)/box"), token: "sfs_x",
            containerID: "A")
        let entryError = await capture { _ = try await other.entry(.random()) }
        guard case .unavailable(let message)? = entryError else {
            Issue.record("expected unavailable, got \(String(describing: entryError))")
            return
        }
        #expect(message.contains("not the one this mount synced with"), "\(message)")
    }

    @Test func aRevokedTokenMakesTheContainerUnavailableNotEmpty() async throws {
        try await ServerFixture.run { fixture in
            let address = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
            let info = try await HTTPContainer.fetchInfo(address: address, token: fixture.token)
            let container = try HTTPContainer(address: address, token: fixture.token, containerID: info.id)
            let id = FileID.random()
            let outcome = try await container.commit(Sample.create(Sample.directory("kept"), id: id))
            guard case .committed = outcome else { throw TestFailure("commit refused: \(outcome)") }
            #expect(try await container.entry(id)?.state.name == Array("kept".utf8))

            let tokens = try #require(fixture.server.tokens)
            let record = try #require(try tokens.list().first { $0.container == fixture.name })
            #expect(try tokens.revoke(id: record.id))
            let error = await capture { _ = try await container.entry(id) }
            guard case .unavailable(let message)? = error else {
                Issue.record("a revoked token must read as unavailable, got \(String(describing: error))")
                return
            }
            #expect(message.contains("refused the token"), "\(message)")
            #expect(
                await capture { _ = try await container.changes(after: .beginning, limit: 10) }?.isRetryable == true)
            // fetchInfo tells a mount at start that the token is refused (bad input, not offline).
            do {
                _ = try await HTTPContainer.fetchInfo(address: address, token: fixture.token)
                Issue.record("fetchInfo accepted a revoked token")
            } catch {
                guard case .refused? = error as? HTTPContainerError else {
                    throw TestFailure("expected refused, got \(error)")
                }
            }
        }
    }

    /// A `503` with `Retry-After: 1` is *busy*: the call asks again after its own backoff (at
    /// least a second apart, never a tight loop) and ends as `busy` — not
    /// `unavailable`, whose retries the upload queue lets go as soon as any other call succeeds
    /// (that made a mount retry ~535 times a second).
    @Test(.timeLimit(.minutes(1))) func aBusyServerIsAskedAgainAfterABackoffNotInALoop() async throws {
        let body = #"{"error":"unavailable","message":"16 chunk uploads are in progress"}"#
        let server = try CannedHTTPServer(
            response: "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        defer { server.stop() }
        let container = try HTTPContainer(
            address: try ServerAddress(parsing: "http://127.0.0.1:\(server.port)/box"), token: "sfs_x",
            containerID: "id")
        let chunk = [UInt8](repeating: 5, count: 1000).withUnsafeBytes { ChunkCodec.encode($0) }
        let upload = Task { await capture { try await container.putChunk(chunk) } }
        // Until the third request (bounded by what it watches, not by a fixed sleep a loaded
        // machine may overrun), at most 20 s.
        let started = ContinuousClock.now
        try await eventually("a third request", timeout: 20) { server.requests >= 3 }
        let elapsed = ContinuousClock.now - started
        let requests = server.requests
        // Cancelled in the backoff after that answer (a second at least), not while the client
        // still reads it: the call then ends with the server's last answer, busy.
        try await Task.sleep(for: .milliseconds(500))  // scenario: cancel within the backoff
        upload.cancel()
        let error = await upload.value
        #expect(requests >= 3, "asked again: \(requests) requests in \(elapsed)")
        // A second apart at least: two backoffs before the third request, and never more than
        // one request per second (plus the first and one in flight).
        #expect(elapsed >= .milliseconds(1900), "\(requests) requests in \(elapsed)")
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        #expect(Double(requests) <= seconds + 2, "\(requests) requests in \(elapsed)")
        guard case .busy(let message)? = error else {
            Issue.record("expected busy, got \(String(describing: error))")
            return
        }
        #expect(error?.isRetryable == true)
        #expect(message.contains("busy"), "\(message)")
    }

    @Test func serverAddressesAreCheckedStrictly() throws {
        let good = try ServerAddress(parsing: "https://sync.example.org:8443/team-1")
        #expect(good.isTLS && good.origin == "https://sync.example.org:8443" && good.name == "team-1")
        let v6 = try ServerAddress(parsing: "http://[::1]:9000/box/")
        #expect(v6.host == "::1" && v6.isLoopback && v6.name == "box")
        for bad in [
            "ftp://h/box", "https://h", "https:///box", "https://h/", "https://h/a/b", "https://h/..", "https://h/.x",
            "https://h:99999/box", "https://h:x/box", "https://user@h/box", "https://h/box?x=1",
            "https://h/" + String(repeating: "n", count: 65),
        ] {
            #expect(throws: AddressError.self, "\(bad)") { _ = try ServerAddress(parsing: bad) }
        }
    }

    /// The `ContainerProtocolError` `body` throws (nil if it succeeds or throws something else).
    private func capture(_ body: () async throws -> Void) async -> ContainerProtocolError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? ContainerProtocolError
        }
    }
}

/// A TCP server on 127.0.0.1 that answers every request with the same canned bytes and closes
/// the connection (a proxy's error page, a wrong service on the port).
final class CannedHTTPServer: @unchecked Sendable {
    let port: Int
    private let socketFD: Int32
    private let thread: Thread
    private let answered = AnswerCount()

    /// The requests answered so far.
    var requests: Int { answered.count.withLock { $0 } }

    init(response: String) throws {
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
        let bytes = Array(response.utf8)
        let counter = answered
        thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 65536)
                _ = read(client, &buffer, buffer.count)
                _ = bytes.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                counter.count.withLock { $0 += 1 }
                shutdown(client, Int32(SHUT_RDWR))
                close(client)
            }
        }
        thread.start()
    }

    func stop() {
        shutdown(socketFD, Int32(SHUT_RDWR))
        close(socketFD)
    }

    /// A port nothing listens on (bound and released at once).
    static func unusedPort() throws -> Int {
        let server = try CannedHTTPServer(response: "")
        server.stop()
        return server.port
    }
}

struct CannedServerError: Error {}

/// How many requests a `CannedHTTPServer` answered.
final class AnswerCount: Sendable {
    let count = Mutex(0)
}

/// A hostile or broken server's login answers: a token that is not one, another user's grant,
/// a device ID with terminal controls — refused, nothing of them is used.
@Suite struct HTTPContainerLoginAnswerTests {
    static func answer(_ json: String) -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
    }

    static let good =
        #"{"token":"sfs_\#(String(repeating: "a", count: 64))","tokenID":"0000abcd","device":"0000dcba","user":"alice","container":"box","role":"editor","expires":1}"#

    @Test(arguments: [
        good.replacingOccurrences(of: "sfs_", with: "sfs_\\n"),
        good.replacingOccurrences(of: #""tokenID":"0000abcd""#, with: #""tokenID":"\u001b[2J""#),
        good.replacingOccurrences(of: #""device":"0000dcba""#, with: #""device":"../../x""#),
        good.replacingOccurrences(of: #""user":"alice""#, with: #""user":"mallory""#),
        good.replacingOccurrences(of: #""container":"box""#, with: #""container":"other""#),
    ])
    func aMalformedGrantIsRefused(json: String) async throws {
        let server = try CannedHTTPServer(response: Self.answer(json))
        defer { server.stop() }
        let address = try ServerAddress(parsing: "http://127.0.0.1:\(server.port)/box")
        let request = LoginRequest(user: "alice", container: "box", device: "laptop", password: "pw")
        do {
            _ = try await HTTPContainer.login(address: address, request)
            Issue.record("a malformed grant was accepted: \(json)")
        } catch {
            #expect(error.description.contains("malformed"), "\(error)")
        }
    }

    @Test func theWellFormedGrantIsTaken() async throws {
        let server = try CannedHTTPServer(response: Self.answer(Self.good))
        defer { server.stop() }
        let address = try ServerAddress(parsing: "http://127.0.0.1:\(server.port)/box")
        let request = LoginRequest(user: "alice", container: "box", device: "laptop", password: "pw")
        let grant = try await HTTPContainer.login(address: address, request)
        #expect(grant.tokenID == "0000abcd" && grant.role == .editor)
    }
}
