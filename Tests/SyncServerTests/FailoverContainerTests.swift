import Foundation
import Glibc
import SyncBackend
import SyncServer
import Synchronization
import Testing

@testable import SyncClient

/// `FailoverContainer`: a server that gives no answer is skipped for the next one in order (the
/// call made again at once), a server that answers — even with a refusal — is never skipped, and
/// a server left alone for its pause is asked first again afterwards. The mount-level behaviour
/// (serve processes killed under load) is `FailoverMountTest`.
@Suite("FailoverContainer: no answer moves to the next server, an answer never does")
struct FailoverContainerTests {
    @Test func aServerThatGivesNoAnswerIsSkippedForTheNextAndComesBackAfterItsPause() async throws {
        try await ServerFixture.run { fixture in
            let live = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
            let info = try await HTTPContainer.fetchInfo(address: live, token: fixture.token)
            let deadPort = try CannedHTTPServer.unusedPort()
            // A server that accepts the connection and closes it without answering (killed mid-call).
            let closing = try CannedHTTPServer(response: "")
            defer { closing.stop() }
            for firstURL in ["http://127.0.0.1:\(deadPort)/box", "http://127.0.0.1:\(closing.port)/box"] {
                let switches = Mutex<[FailoverSwitch]>([])
                let container = FailoverContainer(
                    servers: [
                        try HTTPContainer(
                            address: try ServerAddress(parsing: firstURL), token: fixture.token, containerID: info.id),
                        try HTTPContainer(address: live, token: fixture.token, containerID: info.id),
                    ], firstPause: .seconds(60)
                ) { change in switches.withLock { $0.append(change) } }
                #expect(container.order() == [0, 1])
                let id = FileID.random()
                let outcome = try await container.commit(
                    Sample.create(Sample.directory("kept-\(deadPort)-\(firstURL.count)-\(id)"), id: id))
                guard case .committed = outcome else { throw TestFailure("commit refused: \(outcome)") }
                #expect(try await container.entry(id)?.id == id)
                #expect(container.currentServer == live)
                let seen = switches.withLock { $0 }
                #expect(seen.count == 1, "\(seen)")
                #expect(seen.first?.server == live)
                #expect(seen.first?.previous?.description == firstURL)
                #expect(seen.first?.reason?.isEmpty == false, "\(seen)")
                // Left alone for its pause (the next calls go straight to the live one), then first again.
                #expect(container.order() == [1, 0])
                #expect(container.order(now: .now + .seconds(61)) == [0, 1])
                #expect(container.pause(afterFailures: 3) == .seconds(240))
                #expect(container.pause(afterFailures: 9) == .seconds(300))
            }
        }
    }

    /// Any HTTP answer is the call's result: a container mismatch (a second server that is
    /// another container), a refused token, a proxy's page — the next server is not asked.
    @Test(arguments: [
        ("412 Precondition Failed", #"{"error":"containerMismatch","message":"this is container B"}"#),
        ("401 Unauthorized", #"{"error":"unauthorized","message":"no token"}"#),
        ("502 Bad Gateway", "<html>proxy</html>"),
        ("400 Bad Request", #"{"error":"invalidRequest","message":"broken"}"#),
    ])
    func anAnswerIsNeverSkippedForTheNextServer(status: String, body: String) async throws {
        let canned =
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        try await ServerFixture.run { fixture in
            let live = try ServerAddress(parsing: fixture.server.url(container: fixture.name))
            let info = try await HTTPContainer.fetchInfo(address: live, token: fixture.token)
            let answering = try CannedHTTPServer(response: canned)
            defer { answering.stop() }
            let switches = Mutex<[FailoverSwitch]>([])
            let container = FailoverContainer(servers: [
                try HTTPContainer(
                    address: try ServerAddress(parsing: "http://127.0.0.1:\(answering.port)/box"),
                    token: fixture.token, containerID: info.id),
                try HTTPContainer(address: live, token: fixture.token, containerID: info.id),
            ]) { change in switches.withLock { $0.append(change) } }
            let id = FileID.random()
            do throws(ContainerProtocolError) {
                _ = try await container.commit(Sample.create(Sample.directory("never"), id: id))
                Issue.record("the answering server's refusal was skipped")
            } catch {
                #expect(error.isRetryable || error.isInvalidRequest, "\(error)")
            }
            #expect(answering.requests >= 1)
            #expect(container.order() == [0, 1], "an answering server was marked down")
            #expect(
                switches.withLock { $0.map(\.server) } == [
                    try ServerAddress(parsing: "http://127.0.0.1:\(answering.port)/box")
                ])
            // The commit never reached the live server.
            let direct = try HTTPContainer(address: live, token: fixture.token, containerID: info.id)
            #expect(try await direct.entry(id) == nil)
        }
    }

    /// Every server gives no answer: the call fails as `unavailable` (retryable), never "deleted".
    @Test func noServerAnsweringIsUnavailable() async throws {
        let container = FailoverContainer(servers: [
            try HTTPContainer(
                address: try ServerAddress(parsing: "http://127.0.0.1:\(try CannedHTTPServer.unusedPort())/box"),
                token: "sfs_x", containerID: "id"),
            try HTTPContainer(
                address: try ServerAddress(parsing: "http://127.0.0.1:\(try CannedHTTPServer.unusedPort())/box"),
                token: "sfs_x", containerID: "id"),
        ])
        do throws(ContainerProtocolError) {
            _ = try await container.entry(.random())
            Issue.record("an entry read with no server answering succeeded")
        } catch {
            guard case .unavailable = error else { throw TestFailure("expected unavailable, got \(error)") }
        }
        #expect(container.order().count == 2)
    }

    @Test func serverListsAreCheckedStrictly() throws {
        let list = try ServerList(parsing: "https://A.example.org/box,https://b.example.org:8443/box/")
        #expect(list.addresses.count == 2)
        #expect(list.description == "https://a.example.org/box,https://b.example.org:8443/box")
        #expect(list.primary.origin == "https://a.example.org")
        for bad in [
            "https://a/box,", ",https://a/box", "https://a/box,,https://b/box", "https://a/box,https://A/box",
            "https://a/box,/local/path", "https://a/box,https://b/bad name",
            Array(repeating: "https://a/box", count: 9).enumerated().map { "https://h\($0.offset)/box" }.joined(
                separator: ","),
        ] {
            #expect(throws: AddressError.self, "\(bad)") { try ServerList(parsing: bad) }
        }
    }
}

extension ContainerProtocolError {
    fileprivate var isInvalidRequest: Bool {
        if case .invalidRequest = self { return true }
        return false
    }
}
