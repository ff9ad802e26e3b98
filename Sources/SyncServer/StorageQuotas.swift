import Foundation
import Hummingbird
import Logging
import SyncBackend
import Synchronization

/// Per-container storage quotas (`serve --quota NAME=SIZE`, `--default-quota SIZE`;
/// doc/SEMANTICS.md "Quotas"): the most bytes a container may store — its chunks as stored
/// (compressed, deduplicated), history included, what `container stats` calls stored bytes.
public struct QuotaSettings: Sendable, Equatable {
    /// Limits by container name.
    public var perContainer: [String: Int64]
    /// The limit of every other container; nil: none.
    public var defaultLimit: Int64?

    public init(perContainer: [String: Int64] = [:], defaultLimit: Int64? = nil) {
        self.perContainer = perContainer
        self.defaultLimit = defaultLimit
    }

    public func limit(for name: String) -> Int64? { perContainer[name] ?? defaultLimit }

    public var isEmpty: Bool { perContainer.isEmpty && defaultLimit == nil }
}

/// What the server knows of each container's stored bytes, to refuse the chunk that would take
/// one over its quota (`admit`, before a chunk upload is stored).
///
/// - Usage is measured by the container's own accounting (`CollectableContainer.storageStats`)
///   at most every `remeasureEvery`, plus the payload bytes of every chunk stored since (an
///   estimate from above: a chunk stored twice counts twice until the next measurement).
/// - Only a chunk the container does not hold yet is refused: a change that reuses stored
///   chunks (a rename, a copy, a restore) is never refused, and commits are never refused.
/// - An unknown usage never means "no quota". When a measurement fails, the quota is held against
///   the last measured figure plus what was stored since; before any measurement succeeded, a
///   chunk the container does not hold is turned away as `unavailable` (503, retry later) until
///   one does. Logged once per container until a measurement succeeds again.
/// - A container with no storage accounting at all cannot be held to a quota: logged once.
/// - The refusal is `quotaExceeded` (507); clients keep the change queued and try again later.
final class QuotaBook: Sendable {
    private struct Usage {
        var measured: Int64
        var storedSince: Int64 = 0
        var at: ContinuousClock.Instant
    }

    let settings: QuotaSettings
    let remeasureEvery: Duration
    private let logger: Logger
    private let usage = Mutex<[String: Usage]>([:])
    private let warned = Mutex<Set<String>>([])

    init(settings: QuotaSettings, remeasureEvery: Duration = .seconds(60), logger: Logger) {
        self.settings = settings
        self.remeasureEvery = remeasureEvery
        self.logger = logger
    }

    /// Refuses `chunk` with `quotaExceeded` if storing it would take container `name` over its
    /// quota and the container does not hold it already.
    func admit(_ chunk: EncodedChunk, name: String, container: any Container) async throws(WireFailure) {
        try await admit([chunk], name: name, container: container)
    }

    /// Refuses a batch of chunks as a whole with `quotaExceeded` if storing those the container
    /// does not hold yet would take container `name` over its quota.
    func admit(_ chunks: [EncodedChunk], name: String, container: any Container) async throws(WireFailure) {
        guard let limit = settings.limit(for: name), !chunks.isEmpty else { return }
        let used: Int64
        switch await usage(name, container) {
        case .unaccounted:
            return
        case .known(let bytes):
            used = bytes
            ServerMetrics.quotaUse(name, used: used, limit: limit)
            guard used + Self.bytes(of: chunks) > limit else { return }
            let adding = await notHeld(chunks, container)
            guard !adding.isEmpty, used + Self.bytes(of: adding) > limit else { return }
        case .unknown(let reason):
            if await notHeld(chunks, container).isEmpty { return }
            throw WireFailure(
                .unavailable,
                "the container '\(name)' has a quota and its stored bytes cannot be measured now (\(reason)); "
                    + "try again later",
                headers: [.retryAfter: String(ServerLimits.retryAfterSeconds)])
        }
        throw WireFailure(
            .quotaExceeded,
            "the container '\(name)' is over its quota: it stores \(Self.mebibytes(used)) of \(Self.mebibytes(limit)) "
                + "(history included); delete files and let garbage collection free what retention no longer keeps, "
                + "or ask for a larger quota")
    }

    /// Counts a chunk stored in `name` since the last measurement.
    func stored(_ chunk: EncodedChunk, name: String) {
        guard let limit = settings.limit(for: name) else { return }
        let used = usage.withLock { usage in
            usage[name]?.storedSince += Int64(chunk.payload.count)
            return usage[name].map { $0.measured + $0.storedSince }
        }
        if let used { ServerMetrics.quotaUse(name, used: used, limit: limit) }
    }

    /// What is known of a container's stored bytes.
    private enum Known {
        /// Measured (at most `remeasureEvery` ago, or the last figure when measuring failed) plus
        /// what was stored since.
        case known(Int64)
        /// Never measured: the measurement failed, for `reason`.
        case unknown(String)
        /// The container keeps no storage accounting.
        case unaccounted
    }

    /// The stored bytes of `name` as best known, measuring when the last measurement is stale.
    private func usage(_ name: String, _ container: any Container) async -> Known {
        let now = ContinuousClock.now
        let last = usage.withLock { $0[name] }
        if let last, now - last.at < remeasureEvery {
            return .known(last.measured + last.storedSince)
        }
        guard let accounting = container as? any CollectableContainer else {
            warnOnce(name, "the container '\(name)' has a quota but no storage accounting: the quota is not enforced")
            return .unaccounted
        }
        do throws(ContainerProtocolError) {
            let measured = try await accounting.storageStats().storedBytes
            usage.withLock { $0[name] = Usage(measured: measured, at: now) }
            if warned.withLock({ $0.remove(name) != nil }) {
                logger.notice("the container '\(name)' is measured again for its quota")
            }
            return .known(measured)
        } catch {
            guard let last else {
                warnOnce(
                    name,
                    "cannot measure the container '\(name)' for its quota: uploads of new chunks are turned away"
                        + " until it can be measured: \(error)")
                return .unknown("\(error)")
            }
            warnOnce(
                name,
                "cannot measure the container '\(name)' for its quota: held to the last measured figure plus"
                    + " what was stored since until it can be measured: \(error)")
            return .known(last.measured + last.storedSince)
        }
    }

    /// The chunks `container` does not hold yet, each once (storing a held one again adds
    /// nothing); all of them if that cannot be asked.
    private func notHeld(_ chunks: [EncodedChunk], _ container: any Container) async -> [EncodedChunk] {
        let missing = (try? await container.missingChunks(chunks.map(\.hash))).map(Set.init)
        var seen = Set<ChunkHash>()
        return chunks.filter { (missing?.contains($0.hash) ?? true) && seen.insert($0.hash).inserted }
    }

    private static func bytes(of chunks: [EncodedChunk]) -> Int64 {
        chunks.reduce(0) { $0 + Int64($1.payload.count) }
    }

    private func warnOnce(_ name: String, _ message: String) {
        if warned.withLock({ $0.insert(name).inserted }) { logger.warning("\(message)") }
    }

    static func mebibytes(_ bytes: Int64) -> String {
        String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
