import AsyncHTTPClient
import Foundation
import SyncBackend
import SyncBackendTesting
import SyncClient
import SyncServer
import SyncServerTesting
import Synchronization
import TestSupport

/// A container with canned version history, for the server's and client's history endpoints
/// (the real containers gain `ContainerHistory` on other branches): everything else is its
/// `InMemoryContainer`'s. It answers whatever the test sets — valid or not — and records the
/// arguments it was asked with.
final class CannedHistoryContainer: ForwardingTestContainer, ContainerHistory {
    struct Asked: Equatable, Sendable {
        var historyOf: FileID?
        var historyLimit: Int?
        var trashBefore: EntryVersion??
        var trashLimit: Int?
    }

    let base = InMemoryContainer()
    private let canned = Mutex<(history: [HistoricVersion], trash: [HistoricVersion])>(([], []))
    private let asked = Mutex(Asked())

    var lastAsked: Asked { asked.withLock { $0 } }

    /// From now on `history(of:limit:)` answers the first `limit` of `history`, whatever the ID.
    func answerHistory(_ history: [HistoricVersion]) { canned.withLock { $0.history = history } }
    /// From now on `deletedEntries` answers the first `limit` of `trash` below `before`.
    func answerTrash(_ trash: [HistoricVersion]) { canned.withLock { $0.trash = trash } }

    func history(of id: FileID, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        asked.withLock {
            $0.historyOf = id
            $0.historyLimit = limit
        }
        return Array(canned.withLock { $0.history }.prefix(limit))
    }

    func deletedEntries(before: EntryVersion?, limit: Int) async throws(ContainerProtocolError) -> [HistoricVersion] {
        asked.withLock {
            $0.trashBefore = .some(before)
            $0.trashLimit = limit
        }
        let trash = canned.withLock { $0.trash }
        return Array(trash.filter { before == nil || $0.entry.version < before! }.prefix(limit))
    }
}

/// A container that keeps no history (as a server of an older SyncFS, or a backend without it):
/// an `InMemoryContainer`'s `Container` calls only.
final class HistorylessContainer: ForwardingTestContainer {
    let base = InMemoryContainer()
}

/// A server's containers by name, fixed (`ContainerSource`).
struct FixedContainerSource: ContainerSource {
    let containers: [String: any Container]

    func container(named name: String) async throws(ContainerProtocolError) -> (any Container)? {
        containers[name]
    }
}

/// A server in process serving `containers` (tokens in a temporary root), and an `HTTPContainer`
/// for any of them; `run` stops and removes everything whatever the body does.
struct HistoryServer: Sendable {
    let server: SyncTestServer
    let containers: [String: any Container]

    static func run(_ containers: [String: any Container], _ body: (HistoryServer) async throws -> Void) async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let server = try await SyncTestServer.start(
            root: root.path, containers: FixedContainerSource(containers: containers))
        var failure: (any Error)?
        do {
            try await body(HistoryServer(server: server, containers: containers))
        } catch {
            failure = error
        }
        await server.stop()
        if let failure { throw failure }
    }

    /// A new token for the container `name`.
    func token(_ name: String) throws -> String {
        guard let tokens = server.tokens else { throw TestFailure("no token store") }
        return try tokens.create(container: name, label: "history test").token
    }

    /// A client of the container `name` using `token` (a new one of its own when nil).
    func client(_ name: String, token: String? = nil) throws -> HTTPContainer {
        guard let container = containers[name] else { throw TestFailure("no container \(name)") }
        return try HTTPContainer(
            address: try ServerAddress(parsing: server.url(container: name)), token: token ?? self.token(name),
            containerID: container.containerID)
    }

    /// A raw GET of `path` with `token`.
    func get(_ path: String, token: String) async throws -> Reply {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var request = HTTPClientRequest(url: server.baseURL + path)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        let reply: Reply
        do {
            reply = try await ServerFixture.execute(client, request, timeout: .seconds(60))
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        return reply
    }
}

/// Valid history samples: versions of one file, and tombstones.
enum HistorySample {
    static func version(
        _ id: FileID, _ version: EntryVersion, name: String = "f.txt", deleted: Bool = false,
        replacedAt: Int64? = nil
    ) -> HistoricVersion {
        HistoricVersion(
            entry: RemoteEntry(
                id: id, version: version, isDeleted: deleted, device: "laptop",
                state: Sample.file(name, mtime: Int64(version) * 1_000)),
            committedAt: Int64(version) * 1_000_000_000, replacedAt: replacedAt)
    }

    /// `count` versions of `id`, newest (the current, version `count * 10`) first.
    static func history(of id: FileID, count: Int) -> [HistoricVersion] {
        (0..<count).map { index in
            let number = EntryVersion((count - index) * 10)
            return version(id, number, replacedAt: index == 0 ? nil : Int64(number + 5) * 1_000_000_000)
        }
    }

    /// `count` tombstones of distinct entries, newest deletion (version `count * 10`) first.
    static func trash(count: Int) -> [HistoricVersion] {
        (0..<count).map { index in
            version(FileID.random(), EntryVersion((count - index) * 10), name: "gone-\(index)", deleted: true)
        }
    }
}
