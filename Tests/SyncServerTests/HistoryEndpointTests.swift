import Foundation
import SyncBackend
import Testing

@testable import SyncClient
@testable import SyncServer

/// Version history over HTTP (`GET .../entries/ID/versions`, `GET .../trash`): a round trip
/// through a real server and `HTTPContainer`/`FailoverContainer`, the server's strict request
/// checks, `501` for a container without history, the client's refusal of hostile answers, and
/// the token boundary.
@Suite("Version history over HTTP")
struct HistoryEndpointTests {
    @Test func historyAndTrashMakeTheRoundTrip() async throws {
        let canned = CannedHistoryContainer()
        let id = FileID.random()
        let history = HistorySample.history(of: id, count: 5)
        let trash = HistorySample.trash(count: 4)
        canned.answerHistory(history)
        canned.answerTrash(trash)
        try await HistoryServer.run(["box": canned]) { served in
            let client = try served.client("box")
            #expect(try await client.history(of: id, limit: 10) == history)
            #expect(canned.lastAsked.historyOf == id)
            #expect(canned.lastAsked.historyLimit == 10)
            #expect(try await client.history(of: id, limit: 2) == Array(history.prefix(2)))
            #expect(try await client.deletedEntries(before: nil, limit: 10) == trash)
            #expect(canned.lastAsked.trashBefore == .some(nil))
            // Below version 30: the tombstones at 20 and 10.
            #expect(try await client.deletedEntries(before: 30, limit: 10) == Array(trash.suffix(2)))
            #expect(canned.lastAsked.trashBefore == .some(30))
            #expect(try await client.deletedEntries(before: 0, limit: 10) == [])
            #expect(try await client.deletedEntries(before: .max, limit: 3) == Array(trash.prefix(3)))
            #expect(canned.lastAsked.trashBefore == .some(nil), "a before above every version is asked as none")

            let failover = FailoverContainer(servers: [client])
            #expect(try await failover.history(of: id, limit: 1000) == history)
            #expect(try await failover.deletedEntries(before: 40, limit: 1) == [trash[1]])
        }
    }

    @Test func badLimitsIDsAndVersionsAre400() async throws {
        let canned = CannedHistoryContainer()
        try await HistoryServer.run(["box": canned]) { served in
            let token = try served.token("box")
            let versions = WireProtocol.Path.versions("box", .root)
            let trash = WireProtocol.Path.trash("box")
            let entries = WireProtocol.Path.container("box") + "/entries/"
            for target in [
                versions + "?limit=0", versions + "?limit=1001", versions + "?limit=-1", versions + "?limit=ten",
                versions + "?limit=1&limit=2", versions + "?before=5", trash + "?limit=0", trash + "?limit=1001",
                trash + "?before=0", trash + "?before=-3", trash + "?before=9223372036854775808",
                trash + "?before=x", trash + "?after=1", entries + "00/versions",
                entries + String(repeating: "G", count: 32) + "/versions",
                entries + String(repeating: "A", count: 32) + "/versions",
            ] {
                let reply = try await served.get(target, token: token)
                #expect(reply.status == 400, "\(target): \(reply.status) \(reply.text)")
                #expect(reply.code == .invalidRequest, "\(target): \(reply.text)")
                #expect(reply.wireError?.message.isEmpty == false)
            }
            #expect(canned.lastAsked == CannedHistoryContainer.Asked(), "a refused request reached the container")
            // The bounds themselves are served.
            #expect(try await served.get(versions + "?limit=1000", token: token).status == 200)
            #expect(try await served.get(trash + "?limit=1&before=9223372036854775807", token: token).status == 200)

            // The client refuses the same limits before asking.
            let askedBefore = canned.lastAsked
            let client = try served.client("box", token: token)
            for limit in [0, -1, 1001] {
                await #expect(throws: ContainerProtocolError.self) {
                    _ = try await client.history(of: .root, limit: limit)
                }
                let error = await Self.capture { _ = try await client.deletedEntries(before: nil, limit: limit) }
                guard case .invalidRequest? = error else {
                    Issue.record("limit \(limit): expected invalidRequest, got \(String(describing: error))")
                    continue
                }
            }
            #expect(canned.lastAsked == askedBefore, "the client sent a request it should have refused")
        }
    }

    @Test func aContainerWithoutHistoryIs501AndAClearClientError() async throws {
        let plain = HistorylessContainer()
        try await HistoryServer.run(["plain": plain]) { served in
            let token = try served.token("plain")
            for target in [WireProtocol.Path.versions("plain", .root), WireProtocol.Path.trash("plain")] {
                let reply = try await served.get(target, token: token)
                #expect(reply.status == 501, "\(target): \(reply.status) \(reply.text)")
                #expect(reply.code == .notImplemented)
                #expect(reply.wireError?.message.contains("keeps no version history") == true, "\(reply.text)")
            }
            let client = try served.client("plain", token: token)
            for error in [
                await Self.capture { _ = try await client.history(of: .root, limit: 5) },
                await Self.capture { _ = try await client.deletedEntries(before: nil, limit: 5) },
            ] {
                guard case .invalidRequest(let message)? = error else {
                    Issue.record("expected invalidRequest, got \(String(describing: error))")
                    continue
                }
                #expect(message.contains("keeps no version history"), "\(message)")
                #expect(error?.isRetryable == false)
            }
        }
    }

    @Test func anotherContainersTokenCannotReadThisHistory() async throws {
        let mine = CannedHistoryContainer()
        mine.answerHistory(HistorySample.history(of: .root, count: 2))
        mine.answerTrash(HistorySample.trash(count: 2))
        let other = CannedHistoryContainer()
        try await HistoryServer.run(["mine": mine, "other": other]) { served in
            let otherToken = try served.token("other")
            for target in [WireProtocol.Path.versions("mine", .root), WireProtocol.Path.trash("mine")] {
                let reply = try await served.get(target, token: otherToken)
                #expect(reply.status == 403, "\(target): \(reply.status) \(reply.text)")
                #expect(reply.code == .forbidden)
                let none = try await served.get(target, token: "sfs_" + String(repeating: "0", count: 64))
                #expect(none.status == 401)
            }
            let intruder = try served.client("mine", token: otherToken)
            let error = await Self.capture { _ = try await intruder.history(of: .root, limit: 5) }
            guard case .unavailable? = error else {
                Issue.record("expected unavailable, got \(String(describing: error))")
                return
            }
            #expect(mine.lastAsked == CannedHistoryContainer.Asked(), "the other token's request reached the container")
        }
    }

    /// A server that answers history breaking the protocol (another entry's versions, more than
    /// asked, out of order, a live entry in the trash, invalid entries, a body that does not
    /// decode) is `unavailable`, never passed on.
    @Test func hostileHistoryAnswersAreRefused() async throws {
        let canned = CannedHistoryContainer()
        let id = FileID.random()
        try await HistoryServer.run(["box": canned]) { served in
            let client = try served.client("box")
            var badName = HistorySample.version(id, 9)
            badName.entry.state.name = Array("..".utf8)
            var negative = HistorySample.version(id, 9)
            negative.committedAt = -1
            let histories: [(String, [HistoricVersion])] = [
                ("another entry's version", [HistorySample.version(.random(), 9)]),
                ("older first", [HistorySample.version(id, 5), HistorySample.version(id, 9, replacedAt: 1)]),
                ("two current", [HistorySample.version(id, 9), HistorySample.version(id, 5)]),
                ("an invalid name", [badName]),
                ("a negative time", [negative]),
                ("version 0", [HistorySample.version(id, 0)]),
            ]
            for (what, history) in histories {
                canned.answerHistory(history)
                let error = await Self.capture { _ = try await client.history(of: id, limit: 10) }
                guard case .unavailable? = error else {
                    Issue.record("\(what): expected unavailable, got \(String(describing: error))")
                    continue
                }
            }
            let tombstone = HistorySample.version(id, 9, deleted: true)
            let trashes: [(String, [HistoricVersion])] = [
                ("a live entry", [HistorySample.version(id, 9)]),
                ("a replaced tombstone", [HistorySample.version(id, 9, deleted: true, replacedAt: 5)]),
                ("twice the same entry", [tombstone, HistorySample.version(id, 5, deleted: true)]),
                ("older first", Array(HistorySample.trash(count: 2).reversed())),
            ]
            for (what, trash) in trashes {
                canned.answerTrash(trash)
                let error = await Self.capture { _ = try await client.deletedEntries(before: nil, limit: 10) }
                guard case .unavailable? = error else {
                    Issue.record("\(what): expected unavailable, got \(String(describing: error))")
                    continue
                }
            }
        }
        // Only a server that lies sends these: a body that does not decode, more versions than
        // asked, a tombstone not below `before`, the same page again when asked to read on.
        let page = { (versions: [HistoricVersion], more: Bool) in
            "{\"versions\":\(Self.json(versions)),\"moreComing\":\(more)}"
        }
        let bodies: [(body: String, history: Bool, trash: Bool)] = [
            (#"{"versions":"none","moreComing":false}"#, true, true),
            (page(HistorySample.history(of: id, count: 3), false), true, true),
            (page([HistorySample.version(id, 50, deleted: true)], false), false, true),
            (page(HistorySample.trash(count: 2), true), false, true),
        ]
        for (body, history, trash) in bodies {
            let canned = try CannedHTTPServer(
                response: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)"
                    + "\r\n\r\n" + body)
            defer { canned.stop() }
            let client = try HTTPContainer(
                address: try ServerAddress(parsing: "http://127.0.0.1:\(canned.port)/box"), token: "sfs_x",
                containerID: "id")
            var errors: [ContainerProtocolError?] = []
            if history { errors.append(await Self.capture { _ = try await client.history(of: id, limit: 2) }) }
            if trash { errors.append(await Self.capture { _ = try await client.deletedEntries(before: 40, limit: 5) }) }
            for error in errors {
                guard case .unavailable? = error else {
                    Issue.record("\(body.prefix(60)): expected unavailable, got \(String(describing: error))")
                    continue
                }
            }
        }
    }

    /// A server from before history answers `404 notFound` ("no endpoint"): retryable, never
    /// "no history", and the message says what it may be.
    @Test func aServerWithoutTheEndpointsIsUnavailableWithAHint() async throws {
        let body = #"{"error":"notFound","message":"no endpoint /v1/containers/box/trash (see doc/PROTOCOL.md)"}"#
        let canned = try CannedHTTPServer(
            response: "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        defer { canned.stop() }
        let client = try HTTPContainer(
            address: try ServerAddress(parsing: "http://127.0.0.1:\(canned.port)/box"), token: "sfs_x",
            containerID: "id")
        let error = await Self.capture { _ = try await client.deletedEntries(before: nil, limit: 5) }
        guard case .unavailable(let message)? = error else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        #expect(message.contains("no endpoint") && message.contains("older than version history"), "\(message)")
    }

    /// An answer declared larger than the client's bound is refused without being read.
    @Test func anOversizeHistoryAnswerIsUnavailable() async throws {
        let declared = HTTPContainer.maxHistoryAnswer + 1
        let canned = try CannedHTTPServer(
            response: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(declared)\r\n\r\n{\"v")
        defer { canned.stop() }
        let client = try HTTPContainer(
            address: try ServerAddress(parsing: "http://127.0.0.1:\(canned.port)/box"), token: "sfs_x",
            containerID: "id")
        let error = await Self.capture { _ = try await client.history(of: .root, limit: 5) }
        guard case .unavailable(let message)? = error else {
            Issue.record("expected unavailable, got \(String(describing: error))")
            return
        }
        #expect(message.contains("\(HTTPContainer.maxHistoryAnswer)") || message.contains("broke off"), "\(message)")
    }

    /// A page over the byte bound is cut (`moreComing`), one version always sent.
    @Test func pagesAreBoundedInBytes() async throws {
        let trash = HistorySample.trash(count: 6)
        let one = try JSONEncoder().encode(trash[0]).count
        let json = try await HistoryPageJSON.fetch(limit: 6, maxBytes: 3 * one + 40) { limit in
            Array(trash.prefix(limit))
        }
        let page = try JSONDecoder().decode(HistoryResponse.self, from: json)
        #expect(page.moreComing)
        #expect(!page.versions.isEmpty && page.versions.count < 6)
        #expect(page.versions == Array(trash.prefix(page.versions.count)))
        #expect(json.count <= 3 * one + 40)
        let single = try await HistoryPageJSON.fetch(limit: 6, maxBytes: 10) { limit in Array(trash.prefix(limit)) }
        #expect(try JSONDecoder().decode(HistoryResponse.self, from: single).versions == [trash[0]])
        let whole = try await HistoryPageJSON.fetch(limit: 6, maxBytes: 1 << 20) { limit in Array(trash.prefix(limit)) }
        #expect(
            try JSONDecoder().decode(HistoryResponse.self, from: whole)
                == HistoryResponse(versions: trash, moreComing: false))
    }

    /// Through a real server: a trash over 16 MiB of JSON comes in several pages, and the client
    /// reads on (`before`) until it has `limit`, the same as one page would have held.
    @Test func theClientReadsACutTrashOn() async throws {
        var trash = HistorySample.trash(count: 6)
        let value = [UInt8](repeating: 0xE9, count: WireProtocol.maxXattrValueBytes)
        for index in trash.indices {
            for number in 0..<15 { trash[index].entry.state.xattrs["user.big\(number)"] = value }
        }
        let canned = CannedHistoryContainer()
        canned.answerTrash(trash)
        try await HistoryServer.run(["box": canned]) { served in
            let client = try served.client("box")
            #expect(try await client.deletedEntries(before: nil, limit: 6) == trash)
            let last = try #require(canned.lastAsked.trashBefore ?? nil, "the client asked only once")
            #expect(last < trash[0].entry.version)
            #expect(try await client.deletedEntries(before: nil, limit: 2) == Array(trash.prefix(2)))
        }
    }

    private static func json(_ versions: [HistoricVersion]) -> String {
        String(decoding: (try? JSONEncoder().encode(versions)) ?? Data(), as: UTF8.self)
    }

    static func capture(_ body: () async throws -> Void) async -> ContainerProtocolError? {
        do {
            try await body()
            return nil
        } catch let error as ContainerProtocolError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }
}
