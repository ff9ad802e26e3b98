import Foundation
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
/// - A container that cannot be measured (no accounting, or the measurement failed) is not held
///   to its quota until it can be: a transient failure never refuses an upload. Logged once.
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
        guard let limit = settings.limit(for: name) else { return }
        guard let used = await used(name, container) else { return }
        let adding = Int64(chunk.payload.count)
        guard used + adding > limit else { return }
        if let missing = try? await container.missingChunks([chunk.hash]), missing.isEmpty { return }
        throw WireFailure(
            .quotaExceeded,
            "the container '\(name)' is over its quota: it stores \(Self.mebibytes(used)) of \(Self.mebibytes(limit)) "
                + "(history included); delete files and let garbage collection free what retention no longer keeps, "
                + "or ask for a larger quota")
    }

    /// Counts a chunk stored in `name` since the last measurement.
    func stored(_ chunk: EncodedChunk, name: String) {
        guard settings.limit(for: name) != nil else { return }
        usage.withLock { $0[name]?.storedSince += Int64(chunk.payload.count) }
    }

    /// The stored bytes of `name` as best known, measuring when the last measurement is stale;
    /// nil when it cannot be measured.
    private func used(_ name: String, _ container: any Container) async -> Int64? {
        let now = ContinuousClock.now
        if let known = usage.withLock({ $0[name] }), now - known.at < remeasureEvery {
            return known.measured + known.storedSince
        }
        guard let accounting = container as? any CollectableContainer else {
            warnOnce(name, "the container '\(name)' has a quota but no storage accounting: the quota is not enforced")
            return nil
        }
        do throws(ContainerProtocolError) {
            let measured = try await accounting.storageStats().storedBytes
            usage.withLock { $0[name] = Usage(measured: measured, at: now) }
            return measured
        } catch {
            warnOnce(name, "cannot measure the container '\(name)' for its quota (not enforced meanwhile): \(error)")
            return usage.withLock { $0[name].map { $0.measured + $0.storedSince } }
        }
    }

    private func warnOnce(_ name: String, _ message: String) {
        if warned.withLock({ $0.insert(name).inserted }) { logger.warning("\(message)") }
    }

    static func mebibytes(_ bytes: Int64) -> String {
        String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
