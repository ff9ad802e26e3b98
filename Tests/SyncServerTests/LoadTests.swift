import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncBackend
import SyncServer
import Synchronization
import TestSupport
import Testing

/// A bounded load test against a `syncfs-mount serve` child process: 16 clients commit their own
/// files (some with a new chunk) and all contend on one shared file with compare-and-swap retry
/// loops, for about 8 seconds. Afterwards the container holds every client's last commit, no
/// commit was lost (the shared file's counter equals its successful commits; the version counter
/// equals all successful commits), and the server's memory stayed bounded.
@Suite struct LoadTests {
    static let clients = 16
    static let duration: Duration = .seconds(8)
    static let memoryBoundKiB = 150 * 1024

    /// What one client did.
    struct Tally: Sendable {
        var ownID = FileID.random()
        var ownVersion: EntryVersion = 0
        var commits = 0
        var sharedCommits = 0
        var conflicts = 0
        var chunks = 0
        /// Chunk uploads refused with `503` (too many in progress) and retried.
        var busy = 0
    }

    @Test(.timeLimit(.minutes(3))) func concurrentClientsLoseNoCommit() async throws {
        let directory = try TemporaryDirectory("syncfs-load")
        defer { directory.remove() }
        let root = directory.path + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        let created = try Binary.run(["token", "create", "--root", root, "--container", "load"])
        let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(created.status == 0)
        let server = try ServeProcess.start(root: root)
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = Self.clients * 2
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let api = LoadClient(client: client, base: "http://127.0.0.1:\(server.port)/v1/containers/load", token: token)
        do {
            try await run(api, server: server, root: root)
        } catch {
            Issue.record("\(error)\nserver log:\n\(server.log.suffix(3000))")
        }
        try? await client.shutdown()
        #expect(server.stop() == 0)
    }

    private func run(_ api: LoadClient, server: ServeProcess, root: String) async throws {
        let sharedID = FileID.random()
        let shared = try await api.commit(Sample.create(Sample.file("shared", mtime: 0), id: sharedID))
        guard case .committed = shared.outcome else { throw TestFailure("cannot create the shared file") }
        // Warm up (connections, the container opened, allocator pools), then measure.
        for _ in 0..<20 { _ = try await api.changes(after: .beginning) }
        let before = try #require(server.residentKiB())
        let cpuBefore = server.cpuSeconds() ?? 0
        let started = ContinuousClock.now
        let deadline = started + Self.duration
        let tallies = try await withThrowingTaskGroup(of: Tally.self) { group in
            for index in 0..<Self.clients {
                group.addTask { try await Self.client(index, api: api, sharedID: sharedID, until: deadline) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = ContinuousClock.now - started
        let after = try #require(server.residentKiB())
        let serverCPU = (server.cpuSeconds() ?? 0) - cpuBefore

        // Every client's last commit is what the container holds.
        for tally in tallies {
            let entry = try await api.entry(tally.ownID)
            #expect(entry?.version == tally.ownVersion, "client file \(tally.ownID)")
        }
        // The shared file counted every successful compare-and-swap (its mtime is the count).
        let sharedCommits = tallies.reduce(0) { $0 + $1.sharedCommits }
        let sharedEntry = try #require(try await api.entry(sharedID))
        #expect(sharedEntry.state.mtime == Int64(sharedCommits), "lost or doubled shared commits")
        #expect(sharedCommits > 0)
        // Versions: one per successful commit, none lost, none reused; the feed has each entry once.
        let allCommits = tallies.reduce(0) { $0 + $1.commits } + 1
        var entries: [RemoteEntry] = []
        var cursor = FeedCursor.beginning
        while true {
            let batch = try await api.changes(after: cursor)
            entries += batch.entries
            cursor = batch.cursor
            if !batch.moreComing { break }
        }
        #expect(entries.map(\.version).max() == EntryVersion(allCommits))
        #expect(entries.map(\.version) == entries.map(\.version).sorted())
        #expect(Set(entries.map(\.id)).count == entries.count)
        #expect(entries.count == Self.clients + 1)
        #expect(entries.first { $0.id == sharedID } == sharedEntry)

        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let conflicts = tallies.reduce(0) { $0 + $1.conflicts }
        let chunks = tallies.reduce(0) { $0 + $1.chunks }
        let busy = tallies.reduce(0) { $0 + $1.busy }
        print(
            "load: \(Self.clients) clients, \(allCommits) commits in \(String(format: "%.1f", seconds)) s "
                + "(\(Int(Double(allCommits) / seconds)) commits/s), \(sharedCommits) on the shared file "
                + "(\(conflicts) conflicts retried), \(chunks) chunks put (\(busy) refused as busy and retried); server CPU "
                + "\(String(format: "%.1f", serverCPU)) s, RSS \(before / 1024) MiB before, \(after / 1024) MiB after")
        #expect(after - before < Self.memoryBoundKiB, "RSS grew from \(before) KiB to \(after) KiB")
    }

    /// One client: commits its own file again and again (every fourth time with a new chunk), and
    /// every third time increments the shared file's counter with a compare-and-swap loop.
    private static func client(_ index: Int, api: LoadClient, sharedID: FileID, until deadline: ContinuousClock.Instant)
        async throws -> Tally
    {
        var tally = Tally()
        let name = "client-\(index)"
        var base: EntryVersion = 0
        var round = 0
        var sharedCurrent: RemoteEntry?
        while ContinuousClock.now < deadline {
            round += 1
            var chunks: [EncodedChunk] = []
            if round % 4 == 1 {
                let chunk = Sample.chunk(
                    Sample.bytes(4096, seed: UInt8(truncatingIfNeeded: index)) + Array("\(round)".utf8))
                let put = try await api.put(chunk)
                guard put.status == 204 else { throw TestFailure("chunk put answered \(put.status)") }
                tally.busy += put.refusals
                chunks = [chunk]
                tally.chunks += 1
            }
            let request = CommitRequest(
                id: tally.ownID, baseVersion: base,
                change: .put(Sample.file(name, chunks: chunks, mtime: Int64(round))), device: name)
            let reply = try await api.commit(request)
            guard case .committed(let entry) = reply.outcome else {
                throw TestFailure(
                    "\(name)'s own commit was refused: \(reply.status) \(String(describing: reply.outcome))")
            }
            base = entry.version
            tally.ownVersion = entry.version
            tally.commits += 1
            if round % 3 == 0 {
                // Compare-and-swap: increment the shared counter, retrying on conflicts.
                var current = sharedCurrent
                if current == nil { current = try await api.entry(sharedID) }
                while let known = current {
                    let increment = CommitRequest(
                        id: sharedID, baseVersion: known.version,
                        change: .put(Sample.file("shared", mtime: known.state.mtime + 1)), device: name)
                    let reply = try await api.commit(increment)
                    switch reply.outcome {
                    case .committed(let entry)?:
                        tally.sharedCommits += 1
                        tally.commits += 1
                        sharedCurrent = entry
                        current = nil
                    case .versionConflict(let latest)?:
                        tally.conflicts += 1
                        current = latest
                    default:
                        throw TestFailure("shared commit: \(reply.status) \(String(describing: reply.outcome))")
                    }
                }
            }
        }
        return tally
    }
}

/// Raw requests of the load test.
struct LoadClient: Sendable {
    let client: HTTPClient
    let base: String
    let token: String

    func send(_ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = [])
        async throws -> Reply
    {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        return try await ServerFixture.execute(client, request, timeout: .seconds(60))
    }

    func commit(_ request: CommitRequest) async throws -> (status: Int, outcome: CommitOutcome?) {
        let reply = try await send(
            .POST, "/commits", body: Array(try JSONEncoder().encode(request)),
            headers: [("Content-Type", "application/json")])
        return (reply.status, try? reply.decode(CommitOutcome.self))
    }

    /// Puts the chunk, retrying after `Retry-After` while the server answers `503` or `429` (too
    /// many uploads in progress, on the server or for this token), as a client does.
    func put(_ chunk: EncodedChunk) async throws -> (status: Int, refusals: Int) {
        var refusals = 0
        while true {
            let reply = try await send(
                .PUT, "/chunks/\(chunk.hash.hex)", body: chunk.payload,
                headers: [
                    (WireProtocol.chunkEncodingHeader, WireProtocol.encodingName(chunk.encoding)),
                    (WireProtocol.plainLengthHeader, String(chunk.plainLength)),
                ])
            guard reply.status == 503 || reply.status == 429,
                let delay = reply.headers.first(name: "Retry-After").flatMap({ Int($0) })
            else {
                return (reply.status, refusals)
            }
            refusals += 1
            try await Task.sleep(for: .seconds(delay))  // scenario: a client honours Retry-After
        }
    }

    func entry(_ id: FileID) async throws -> RemoteEntry? {
        let reply = try await send(.GET, "/entries/\(id.hex)")
        if reply.status == 404 { return nil }
        guard reply.status == 200 else { throw TestFailure("entry: \(reply.status) \(reply.text)") }
        return try reply.decode(RemoteEntry.self)
    }

    func changes(after cursor: FeedCursor) async throws -> ChangeBatch {
        let reply = try await send(.GET, "/changes?after=\(cursor.token)&limit=10000")
        guard reply.status == 200 else { throw TestFailure("changes: \(reply.status) \(reply.text)") }
        return try reply.decode(ChangeBatch.self)
    }
}
