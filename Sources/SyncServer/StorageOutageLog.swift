import Logging
import Synchronization

/// What the server logs while the storage behind its containers (PostgreSQL, the chunk store, a
/// container's disk) cannot be reached and requests are answered `503 storageUnavailable`
/// (doc/PROTOCOL.md): the first such answer at warning level, with the reason; then at most one
/// warning every `summaryEvery` counting the answers since; and, at the first request served
/// again, a notice saying how long it lasted. So an outage is seen in the log at once, and a long
/// one does not flood it.
final class StorageOutageLog: Sendable {
    private struct Outage {
        var began: ContinuousClock.Instant
        var lastSummary: ContinuousClock.Instant
        var refused = 0
        var refusedSinceSummary = 0
    }

    private let logger: Logger
    private let summaryEvery: Duration
    private let outage = Mutex<Outage?>(nil)

    init(logger: Logger, summaryEvery: Duration = .seconds(60)) {
        self.logger = logger
        self.summaryEvery = summaryEvery
    }

    /// A request was answered `storageUnavailable` because of `reason`.
    func refused(_ reason: String, now: ContinuousClock.Instant = .now) {
        enum Say {
            case began
            case summary(Int, Duration)
            case nothing
        }
        let say: Say = outage.withLock { outage in
            guard var current = outage else {
                outage = Outage(began: now, lastSummary: now, refused: 1)
                return .began
            }
            current.refused += 1
            current.refusedSinceSummary += 1
            defer { outage = current }
            guard now - current.lastSummary >= summaryEvery else { return .nothing }
            let count = current.refusedSinceSummary
            current.lastSummary = now
            current.refusedSinceSummary = 0
            return .summary(count, now - current.began)
        }
        switch say {
        case .began:
            logger.warning(
                "storage unavailable: requests are answered 503 storageUnavailable until it is back: \(reason)")
        case .summary(let count, let lasted):
            let message =
                "storage still unavailable after \(Self.seconds(lasted)): \(count) request(s) answered"
                + " storageUnavailable since the last report: \(reason)"
            logger.warning("\(message)")
        case .nothing:
            break
        }
    }

    /// A request that needs the storage was served: ends an outage, if one was going on.
    func served(now: ContinuousClock.Instant = .now) {
        let ended = outage.withLock { outage in
            defer { outage = nil }
            return outage
        }
        guard let ended else { return }
        let message =
            "storage available again after \(Self.seconds(now - ended.began)) (\(ended.refused) request(s)"
            + " answered storageUnavailable meanwhile)"
        logger.notice("\(message)")
    }

    private static func seconds(_ duration: Duration) -> String { "\(duration.components.seconds) s" }
}
