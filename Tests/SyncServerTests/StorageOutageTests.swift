import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import SyncBackend
import SyncBackendTesting
import SyncClient
import SyncServerTesting
import Synchronization
import TestSupport
import Testing

@testable import SyncServer

/// The storage behind a container (PostgreSQL, the chunk store, a container's disk) goes away
/// while the server runs (doc/PROTOCOL.md, `storageUnavailable`): every request on it is
/// answered `503 storageUnavailable` with `Retry-After`, at once; a client gets
/// `ContainerProtocolError.storageUnavailable` without waiting out its busy backoff; the server
/// logs the outage once at warning level, then a summary at most once a minute, and a notice when
/// the storage is back.
@Suite("Storage outages behind the server")
struct StorageOutageTests {
    static let token = "outage-test-token"

    @Test func anOutageIsAnsweredDistinctlyLoggedOnceAndEnds() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let storage = FaultInjectingContainer(InMemoryContainer())
        let log = CapturedLog()
        var logger = Logger(label: "outage-test") { _ in log }
        logger.logLevel = .info
        let server = try await SyncTestServer.start(
            root: root.path, containers: OneContainer(container: storage), tokenAuthority: OneToken(), logger: logger)
        let address = try ServerAddress(parsing: server.url(container: "box"))
        let client = try HTTPContainer(address: address, token: Self.token, containerID: storage.containerID)
        do {
            #expect(try await client.entry(FileID.random()) == nil, "served before the outage")

            storage.startOutage(error: .unavailable("PostgreSQL: cannot read the entry: connection refused"))
            let started = ContinuousClock.now
            for _ in 0..<5 {
                do throws(ContainerProtocolError) {
                    _ = try await client.entry(FileID.random())
                    Issue.record("answered during the outage")
                } catch {
                    guard case .storageUnavailable(let reason) = error else {
                        Issue.record("not storageUnavailable: \(error)")
                        continue
                    }
                    #expect(reason.contains("connection refused"), "\(reason)")
                }
            }
            #expect(ContinuousClock.now - started < .seconds(10), "refused at once, not after a busy backoff")

            let raw = try await Self.get(server.baseURL + "/v1/containers/box/entries/" + FileID.random().hex)
            #expect(raw.status == 503, "\(raw)")
            #expect(raw.code == "storageUnavailable", "\(raw)")
            #expect(raw.retryAfter != nil, "\(raw)")

            let warnings = log.lines.filter { $0.hasPrefix("warning") && $0.contains("storage unavailable") }
            #expect(warnings.count == 1, "logged once: \(log.lines)")

            storage.endOutage()
            #expect(try await client.entry(FileID.random()) == nil, "served again")
            #expect(
                log.lines.contains { $0.hasPrefix("notice") && $0.contains("storage available again") }, "\(log.lines)")
        } catch {
            Issue.record("\(error)")
        }
        await server.stop()
    }

    @Test func aLongOutageIsSummarisedAtMostOncePerInterval() {
        let log = CapturedLog()
        let outages = StorageOutageLog(logger: Logger(label: "outage-test") { _ in log }, summaryEvery: .seconds(60))
        let start = ContinuousClock.now
        outages.refused("PostgreSQL is down", now: start)
        outages.refused("PostgreSQL is down", now: start + .seconds(10))
        outages.refused("PostgreSQL is down", now: start + .seconds(30))
        #expect(log.lines.count == 1, "\(log.lines)")
        outages.refused("PostgreSQL is down", now: start + .seconds(61))
        #expect(log.lines.count == 2, "\(log.lines)")
        #expect(log.lines.last?.contains("3 request(s)") == true, "\(log.lines)")
        outages.refused("PostgreSQL is down", now: start + .seconds(90))
        #expect(log.lines.count == 2, "\(log.lines)")
        outages.served(now: start + .seconds(95))
        #expect(log.lines.last?.hasPrefix("notice") == true, "\(log.lines)")
        #expect(log.lines.last?.contains("95 s (5 request(s)") == true, "\(log.lines)")
        outages.served(now: start + .seconds(96))
        #expect(log.lines.count == 3, "said once")
    }

    /// GETs `url` with the token: its status, error code and `Retry-After`.
    static func get(_ url: String) async throws -> (status: Int, code: String?, retryAfter: String?) {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        let answer: (status: Int, code: String?, retryAfter: String?)
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 65_536)
            let error = try? JSONDecoder().decode(WireError.self, from: Data(body.readableBytesView))
            answer = (Int(response.status.code), error?.error, response.headers.first(name: "Retry-After"))
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
        return answer
    }
}

/// The one container "box" of these tests.
private struct OneContainer: ContainerSource {
    let container: any Container
    func container(named name: String) async throws(ContainerProtocolError) -> (any Container)? {
        name == "box" ? container : nil
    }
}

/// Accepts the one token of these tests, for "box".
private struct OneToken: TokenAuthority {
    func authenticate(token: String, address: String?) async throws(SyncServerError) -> AccessGrant? {
        token == StorageOutageTests.token
            ? AccessGrant(tokenID: "0", user: nil, device: nil, roles: ["box": .editor]) : nil
    }
}
