import ArgumentParser
import Foundation
import SyncBackend
import SyncClient
import SyncFS

/// `syncfs-bench measure-server URL --token-file FILE`: loads a sync server with
/// `--clients` concurrent clients (each its own `HTTPContainer`) for `--seconds` per phase and
/// prints one JSON line:
///
///     {"clients":8,"commits":…,"commits_per_s":…,"commit_p50_ms":…,"commit_p99_ms":…,
///      "chunks":…,"chunk_bytes":…,"chunk_mb_per_s":…,"chunk_kib":1024}
///
/// Phase 1, commits: each client creates one file entry, then commits metadata changes to it
/// (a new mtime, base = its last version) as fast as the server answers; every commit must
/// succeed (a refused one fails the command: a lost commit). Phase 2, chunks: each client puts
/// distinct random chunks of `--chunk-kib` KiB (stored raw, as incompressible data is), retrying
/// after 20 ms when the server answers busy (503), and `chunk_mb_per_s` is their plain bytes
/// (10^6) per second over all clients. For
/// scripts/bench/server.py; the container gets the measured entries and chunks.
struct MeasureServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "measure-server",
        abstract: "Measure a sync server's commits per second and chunk upload rate with concurrent clients."
    )

    @Argument(help: "The container: http(s)://HOST:PORT/NAME.")
    var url: String

    @Option(help: ArgumentHelp("The file holding the access token.", valueName: "file"))
    var tokenFile: String

    @Option(help: "Trust only the certificates in this PEM file.")
    var caFile: String?

    @Option(help: "Concurrent clients.")
    var clients: Int = 8

    @Option(help: "Seconds per phase.")
    var seconds: Double = 5

    @Option(help: "Chunk size in KiB for the upload phase.")
    var chunkKib: Int = 1024

    @Option(help: "Instead of the timed phases: commit this many new empty files and exit.")
    var create: Int?

    func validate() throws {
        guard (1...256).contains(clients) else { throw ValidationError("--clients must be 1...256") }
        guard seconds > 0, seconds <= 600 else { throw ValidationError("--seconds must be in (0, 600]") }
        guard (1...16_384).contains(chunkKib) else { throw ValidationError("--chunk-kib must be 1...16384") }
        if let create, !(1...10_000_000).contains(create) {
            throw ValidationError("--create must be 1...10000000")
        }
    }

    func run() throws {
        // The command tree is synchronous (the FUSE daemon owns the main thread).
        print(try Blocking.run { () async throws(any Error) in try await measure() })
    }

    private func measure() async throws -> String {
        let address = try ServerAddress(parsing: url)
        let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let info = try await HTTPContainer.fetchInfo(address: address, token: token, caFile: caFile)
        let container = try HTTPContainer(address: address, token: token, containerID: info.id, caFile: caFile)
        if let create { return try await MeasureServerCreates.run(container, count: create, clients: clients) }
        let duration = Duration.milliseconds(Int64(seconds * 1000))

        let commitStart = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for client in 0..<clients {
                group.addTask { try await Self.commitLoop(container, client: client, for: duration) }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }
        }
        let commitSeconds = (ContinuousClock.now - commitStart).seconds

        let chunkStart = ContinuousClock.now
        let chunkCounts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<clients {
                group.addTask { try await Self.chunkLoop(container, bytes: chunkKib << 10, for: duration) }
            }
            return try await group.reduce(0, +)
        }
        let chunkSeconds = (ContinuousClock.now - chunkStart).seconds
        let chunkBytes = chunkCounts * (chunkKib << 10)
        let sorted = latencies.sorted()
        let report: [String: Any] = [
            "clients": clients, "commits": sorted.count,
            "commits_per_s": Double(sorted.count) / commitSeconds,
            "commit_p50_ms": Self.percentile(sorted, 50), "commit_p99_ms": Self.percentile(sorted, 99),
            "chunks": chunkCounts, "chunk_bytes": chunkBytes,
            "chunk_mb_per_s": Double(chunkBytes) / 1e6 / chunkSeconds, "chunk_kib": chunkKib,
        ]
        let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    /// Commits to one file of its own until `duration` passed; returns each commit's latency (ms).
    private static func commitLoop(_ container: HTTPContainer, client: Int, for duration: Duration) async throws
        -> [Double]
    {
        let id = FileID.random()
        var state = EntryState(
            parent: .root, name: Array("measure-\(client)-\(id.hex.prefix(8))".utf8), kind: .file, mode: 0o644,
            mtime: 0, size: 0)
        var base: EntryVersion = 0
        var latencies: [Double] = []
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            state.mtime += 1
            let started = ContinuousClock.now
            let outcome = try await container.commit(
                CommitRequest(id: id, baseVersion: base, change: .put(state), device: "measure-server"))
            guard case .committed(let entry) = outcome else {
                throw ValidationError("commit \(latencies.count) of client \(client) was refused: \(outcome)")
            }
            latencies.append((ContinuousClock.now - started).seconds * 1000)
            base = entry.version
        }
        return latencies
    }

    /// Puts distinct random chunks of `bytes` bytes until `duration` passed; returns how many.
    private static func chunkLoop(_ container: HTTPContainer, bytes: Int, for duration: Duration) async throws -> Int {
        let encoder = ChunkEncoder(level: 0)
        // SplitMix64 from a random seed: incompressible bytes at memory speed (the system
        // generator makes a syscall per call and would measure this client, not the server).
        var state = UInt64.random(in: .min ... .max)
        var plain = [UInt8](repeating: 0, count: bytes)
        var count = 0
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            plain.withUnsafeMutableBytes { buffer in
                for index in stride(from: 0, to: buffer.count - 7, by: 8) {
                    state &+= 0x9E37_79B9_7F4A_7C15
                    var mixed = state
                    mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
                    mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
                    buffer.storeBytes(of: mixed ^ (mixed >> 31), toByteOffset: index, as: UInt64.self)
                }
            }
            let chunk = plain.withUnsafeBytes { encoder.encode($0) }
            try await put(chunk, into: container, giveUpAt: end + .seconds(30))
            count += 1
        }
        return count
    }

    /// Puts `chunk`; a busy server answers 503 (retryable): try again after 20 ms, as the engine
    /// would, until `giveUpAt`.
    private static func put(_ chunk: EncodedChunk, into container: HTTPContainer, giveUpAt: ContinuousClock.Instant)
        async throws
    {
        while true {
            do throws(ContainerProtocolError) {
                try await container.putChunk(chunk)
                return
            } catch {
                guard error.isRetryable, ContinuousClock.now < giveUpAt else { throw error }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Double(sorted.count - 1) * p / 100
        return sorted[Int(rank.rounded())]
    }
}

extension Duration {
    fileprivate var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
