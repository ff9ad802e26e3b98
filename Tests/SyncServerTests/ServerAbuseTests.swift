import Foundation
import SyncBackend
import SyncClient
import SyncServer
import TestSupport
import Testing

/// A hostile token holder, or anyone on the network, against the server's fairness limits
/// (doc/PROTOCOL.md, "Fairness and deadlines"); loopback only, each bounded in time.
/// Serialized: each test's windows (progress, idle) are wall-clock, and its two backends' runs at
/// once (40 idle connections, 20 slow uploads each) would load the machine against each other.
@Suite(.serialized) struct ServerAbuseTests {
    /// 20 slow chunk PUTs of one token (16 MiB declared, a kilobyte sent) take only that token's
    /// share of upload slots (the rest are `429` at once); another container meanwhile uploads,
    /// commits and sees its commit arrive through a change wait while the abuser still holds its
    /// share (so without waiting for it, whatever the machine's speed). (Before the
    /// budgets, 16 such PUTs held every upload slot of the server and every other container's
    /// uploads got `503`.)
    @Test(.timeLimit(.minutes(1)), arguments: ServerBackend.allCases)
    func slowUploadsOfOneTokenLeaveOtherContainersWorking(backend: ServerBackend) async throws {
        try await ServerFixture.run(backend: backend, container: "victim") { fixture in
            let server = fixture.server
            let abuserToken = try await fixture.makeContainer("abuser")
            let share = ServerLimits.standard().perToken.uploads
            var slow: [RawConnection] = []
            defer { for connection in slow { connection.close() } }
            for index in 0..<20 {
                let connection = try RawConnection(port: server.port)
                let hash = String(repeating: String(format: "%02x", index), count: 32)
                #expect(
                    connection.send(
                        RawConnection.chunkPutHead(
                            container: "abuser", token: abuserToken, hash: hash, length: 16 << 20)))
                connection.send([UInt8](repeating: 1, count: 1024))
                slow.append(connection)
            }
            try await server.waitUntil("the abuser holds its share") { $0.chunkUploadsInProgress == share }
            let connections = slow
            // Polled, not a fixed wait: at load an answer takes more than the 50 ms each read waits.
            try await eventually("\(20 - share) answers to read", timeout: 5) {
                connections.filter(\.isReadable).count >= 20 - share
            }
            let refused = await blocking { connections.map { $0.readUntilClosed(timeout: .milliseconds(50)).bytes } }
            let tooMany = refused.filter { String(decoding: $0, as: UTF8.self).hasPrefix("HTTP/1.1 429") }
            #expect(tooMany.count == 20 - share, "\(refused.map { String(decoding: $0.prefix(40), as: UTF8.self) })")
            #expect(server.chunkUploadsInProgress == share)

            let address = try ServerAddress(parsing: server.url(container: "victim"))
            let info = try await HTTPContainer.fetchInfo(address: address, token: fixture.token)
            let writer = try HTTPContainer(address: address, token: fixture.token, containerID: info.id)
            let reader = try HTTPContainer(address: address, token: fixture.token, containerID: info.id)
            let cursor = try await reader.changes(after: .beginning, limit: 100).cursor
            let chunk = Sample.chunk(Sample.bytes(300_000, seed: 9))
            let started = ContinuousClock.now
            let waiting = Task { try await reader.waitForChanges(after: cursor, timeout: .seconds(10)) }
            try await writer.putChunk(chunk)
            let outcome = try await writer.commit(Sample.create(Sample.file("still-works", chunks: [chunk])))
            guard case .committed = outcome else { throw TestFailure("the victim's commit was refused: \(outcome)") }
            #expect(try await waiting.value)
            let elapsed = ContinuousClock.now - started
            // What proves the victim never waited for the abuser: the abuser still holds its whole
            // share now, so the victim's upload, commit and change wait went through beside it, not
            // after it. (A wall-clock bound of a second failed on a loaded machine, 1.4-2.1 s,
            // without proving more.) The bound below only catches a victim that waited for the
            // abuser's uploads to be cut off, which takes at least the progress window.
            #expect(server.chunkUploadsInProgress == share, "the abuser's uploads ended before the victim's commit")
            #expect(
                elapsed < ServerLimits.standard().progressWindow,
                "upload, commit and propagation took \(elapsed): as long as the abuser's uploads are allowed")
            print("victim's upload, commit and propagation beside the abuser: \(elapsed)")
        }
    }

    /// A chunk body sent a kilobyte a second is answered `408 requestTimeout` and its connection
    /// closed within the documented progress window (10 s after its head: 32 KiB are needed per
    /// window), and its upload slot is free again.
    @Test(.timeLimit(.minutes(1)), arguments: ServerBackend.allCases) func aSlowBodyIsCutOffWithinTheDeadline(
        backend: ServerBackend
    ) async throws {
        try await ServerFixture.run(backend: backend) { fixture in
            let window = ServerLimits.standard().progressWindow
            let connection = try RawConnection(port: fixture.server.port)
            defer { connection.close() }
            let hash = String(repeating: "ab", count: 32)
            let started = ContinuousClock.now
            connection.send(
                RawConnection.chunkPutHead(container: fixture.name, token: fixture.token, hash: hash, length: 1 << 20))
            let (answer, closed) = await blocking { () -> ([UInt8], Bool) in
                var answer: [UInt8] = []
                while ContinuousClock.now - started < window * 2 {
                    connection.send([UInt8](repeating: 2, count: 1024))
                    let (bytes, closed) = connection.readUntilClosed(timeout: .seconds(1))
                    answer += bytes
                    if closed { return (answer, true) }
                }
                return (answer, false)
            }
            let elapsed = ContinuousClock.now - started
            let text = String(decoding: answer, as: UTF8.self)
            #expect(closed, "still open after \(elapsed)")
            #expect(text.hasPrefix("HTTP/1.1 408"), "\(text)")
            #expect(text.contains("requestTimeout"), "\(text)")
            #expect(elapsed >= window - .seconds(1) && elapsed < window + .seconds(3), "cut off after \(elapsed)")
            try await fixture.server.waitUntil("the slot is free") { $0.chunkUploadsInProgress == 0 }
            #expect(fixture.server.bodyBytesInFlight == 0)
        }
    }

    /// 40 idle connections without a token under a cap of 16: the oldest are closed as new ones
    /// come, at most 16 stay, and the rest are closed after the idle time; meanwhile a token
    /// holder gets answers at once, and its connection is not closed for being idle as long.
    @Test(.timeLimit(.minutes(1)), arguments: ServerBackend.allCases)
    func idleConnectionsWithoutATokenAreCappedAndTokenHoldersAnswered(backend: ServerBackend) async throws {
        var limits = ServerLimits.standard()
        limits.unauthenticatedConnections = 16
        // Long enough that the answers below come well within it, however loaded the machine.
        limits.unauthenticatedIdle = .seconds(5)
        try await ServerFixture.run(backend: backend, limits: limits) { fixture in
            let server = fixture.server
            let idle = try (0..<40).map { _ in try RawConnection(port: server.port) }
            defer { for connection in idle { connection.close() } }
            try await server.waitUntil("the cap holds") { $0.connections.open >= 16 }
            // Polled, not slept for: at load the closing of the 24 beyond the cap takes a while.
            try await eventually("the 24 beyond the cap closed", timeout: 4) {
                idle.filter(\.isClosedByServer).count >= 24
            }
            #expect(server.connections.unauthenticated <= 16, "\(server.connections)")
            let closedEarly = idle.filter(\.isClosedByServer).count
            #expect(closedEarly >= 24, "\(closedEarly) of 40 closed")

            let started = ContinuousClock.now
            #expect(try await fixture.send(.GET, fixture.path()).status == 200)
            #expect(try await fixture.send(.GET, "/v1/health", auth: .none).status == 200)
            // Answered beside the silent connections the cap let in, not after the idle time cut
            // them: some are still open now (a wall-clock bound of a second failed at load, 1.7 s,
            // without proving more).
            let waiting = idle.filter { !$0.isClosedByServer }.count
            #expect(waiting > 0, "answered only after every silent connection was closed")
            print(
                "token holder and health answered beside \(waiting) silent connections in \(ContinuousClock.now - started)"
            )

            // After the idle time every silent connection is gone; the token holder still works.
            try await eventually("every silent connection closed after the idle time") {
                idle.allSatisfy(\.isClosedByServer) && server.connections.unauthenticated <= 1
            }
            let stillOpen = idle.filter { !$0.isClosedByServer }.count
            #expect(stillOpen == 0, "\(stillOpen) still open")
            #expect(server.connections.unauthenticated <= 1, "\(server.connections)")
            #expect(try await fixture.send(.GET, fixture.path()).status == 200)
        }
    }

    /// Beyond the cap of connections from one address, new ones are closed at once.
    @Test(.timeLimit(.minutes(1)), arguments: ServerBackend.allCases) func connectionsPerAddressAreCapped(
        backend: ServerBackend
    ) async throws {
        var limits = ServerLimits.standard()
        limits.connectionsPerAddress = 10
        try await ServerFixture.run(backend: backend, limits: limits) { fixture in
            let connections = try (0..<15).map { _ in try RawConnection(port: fixture.server.port) }
            defer { for connection in connections { connection.close() } }
            try await eventually("the 5 beyond the cap closed") {
                connections.filter(\.isClosedByServer).count >= 5 && fixture.server.connections.open == 10
            }
            #expect(connections.filter(\.isClosedByServer).count == 5)
            #expect(fixture.server.connections.open == 10)
        }
    }

    /// `syncfs-mount serve` started with a soft open-file limit of 256 (a container's default)
    /// raises it to the hard limit, so a few hundred idle connections cannot lock everyone out.
    @Test(.timeLimit(.minutes(1))) func serveRaisesItsOpenFileLimitToTheHardLimit() throws {
        let directory = try TemporaryDirectory("syncfs-nofile")
        defer { directory.remove() }
        // Binary.configure runs `umask X && exec ...` through /bin/sh: the limit goes with it.
        let server = try ServeProcess.start(root: directory.path, umask: "077 && ulimit -Sn 256")
        defer { server.stop() }
        let limits = try String(contentsOfFile: "/proc/\(server.pid)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        let soft = fields.count > 4 ? String(fields[3]) : ""
        let hard = fields.count > 4 ? String(fields[4]) : ""
        #expect(soft == hard, "\(line)")
        #expect(soft != "256" || hard == "256", "\(line)")
    }
}

/// Runs blocking socket work on a thread of its own, keeping the cooperative pool free for the
/// in-process server.
func blocking<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
