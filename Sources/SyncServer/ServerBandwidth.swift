import HTTPTypes
import SyncBackend
import Synchronization

/// The server's bandwidth limits on chunk bytes (`serve --upload-limit`, `--download-limit` per
/// container; `--total-upload-limit`, `--total-download-limit` for the whole server). Upload:
/// the chunk payloads clients send to `PUT .../chunks/HASH`; download: those `GET
/// .../chunks/HASH` sends back. One token bucket per container and direction, one per direction
/// for the server (`TokenBucket`: a burst of one second).
///
/// As every other limit of the server (`ServerLimits`), it answers at once and never queues a
/// connection. A chunk's bytes are charged BEFORE it is served — an upload's declared
/// `Content-Length` before its body is read, a download's stored size before it is sent — and
/// only if both buckets hold them (`TokenBucket.admits`: a chunk larger than the burst needs a
/// full bucket), so concurrent requests never pass on one credit and a bucket's debt is at most
/// one chunk. Otherwise `429 tooManyRequests` (the container's bucket) or `503 unavailable` (the
/// server's) with `Retry-After`: the whole seconds until the bucket holds the chunk, at most
/// `longestRetryAfter`, well within a client's patience; the client comes back then
/// (`BusyBackoff`). The server's total is shared in turns: a container refused by it is queued,
/// and while it waits (its turn kept for `turnKept`) the total admits no other container first,
/// so one container's many requests (a hostile token holder's) cannot starve another. A limit
/// only delays, it never drops. Requests without chunk bytes are not counted.
final class ServerBandwidth: Sendable {
    enum Direction: Sendable { case upload, download }

    typealias Settings = ServerBandwidthLimits

    /// Chunk bytes counted and requests refused so far, per direction (tests, logs).
    struct Counts: Sendable, Equatable {
        var uploadedBytes: Int64 = 0
        var downloadedBytes: Int64 = 0
        var refusals = 0
    }

    /// The longest `Retry-After` a refusal says (seconds).
    static let longestRetryAfter = 5
    /// How long a container refused by the server's total keeps its turn if it does not come back.
    static let turnKept: Duration = .seconds(longestRetryAfter + 3)

    private struct State {
        var containers: [String: (upload: TokenBucket, download: TokenBucket)] = [:]
        var totalUpload: TokenBucket
        var totalDownload: TokenBucket
        /// Containers waiting for the server's total, in order, and since when (per direction).
        var uploadTurns: [(container: String, since: Duration)] = []
        var downloadTurns: [(container: String, since: Duration)] = []
        var counts = Counts()
    }

    private enum Refusal {
        case container(Duration)
        case server(Duration)
    }

    let settings: Settings
    private let state: Mutex<State>
    private let clock: @Sendable () -> Duration

    static let origin = ContinuousClock.now

    /// The real monotonic clock unless a test passes its own.
    static let realClock: @Sendable () -> Duration = { ContinuousClock.now - ServerBandwidth.origin }

    init(_ settings: Settings, clock: @escaping @Sendable () -> Duration = ServerBandwidth.realClock) {
        self.settings = settings
        self.clock = clock
        let now = clock()
        state = Mutex(
            State(
                totalUpload: TokenBucket(rate: settings.totalUpload?.bytesPerSecond, now: now),
                totalDownload: TokenBucket(rate: settings.totalDownload?.bytesPerSecond, now: now)))
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// Before an upload's body is read: its declared `Content-Length` (nil: none) is charged, or
    /// the request refused (a length is required: the bytes are charged before they come).
    func admitUpload(declaredLength: Int?, largest: Int, container: String) throws(WireFailure) {
        guard let declaredLength, declaredLength >= 0 else {
            throw WireFailure(.invalidRequest, "a chunk upload needs a Content-Length under a bandwidth limit")
        }
        guard declaredLength <= largest else {
            throw WireFailure(.tooLarge, "a chunk of \(declaredLength) bytes; at most \(largest)")
        }
        try admit(declaredLength, .upload, container: container)
    }

    /// Before a download's chunk is fetched: refused while a bucket is in debt (nothing charged;
    /// the chunk's size is charged by `admit` once known, before it is sent).
    func mayFetch(container: String) throws(WireFailure) {
        let now = clock()
        let refusal = state.withLock { state -> Refusal? in
            let own = state.containers[container]?.download.delay(admitting: 0, now: now) ?? .zero
            if own > .zero { return .container(own) }
            let total = state.totalDownload.delay(admitting: 0, now: now)
            return total > .zero ? .server(total) : nil
        }
        if let refusal { throw failure(refusal, .download) }
    }

    /// Charges `bytes` of chunk payload about to go `direction` for `container`, or refuses the
    /// request if its container's bucket or the server's (or another container's turn at it)
    /// does not let them go now.
    func admit(_ bytes: Int, _ direction: Direction, container: String) throws(WireFailure) {
        let now = clock()
        let bytes = Int64(max(0, bytes))
        let refusal = state.withLock { state -> Refusal? in
            var buckets = state.containers[container] ?? Self.fresh(settings, now: now)
            let own = direction == .upload ? buckets.upload : buckets.download
            let ownDelay = own.delay(admitting: bytes, now: now)
            if ownDelay > .zero { return .container(ownDelay) }
            var total = direction == .upload ? state.totalUpload : state.totalDownload
            var turns = direction == .upload ? state.uploadTurns : state.downloadTurns
            defer {
                if direction == .upload { state.uploadTurns = turns } else { state.downloadTurns = turns }
            }
            turns.removeAll { now - $0.since > Self.turnKept }
            let totalDelay = total.delay(admitting: bytes, now: now)
            let othersFirst = turns.first.map { $0.container != container } ?? false
            if totalDelay > .zero || othersFirst {
                if !turns.contains(where: { $0.container == container }) { turns.append((container, now)) }
                return .server(max(totalDelay, .seconds(1)))
            }
            turns.removeAll { $0.container == container }
            total.take(bytes, now: now)
            if direction == .upload {
                buckets.upload.take(bytes, now: now)
                state.totalUpload = total
                state.counts.uploadedBytes += bytes
            } else {
                buckets.download.take(bytes, now: now)
                state.totalDownload = total
                state.counts.downloadedBytes += bytes
            }
            if settings.perContainerUpload != nil || settings.perContainerDownload != nil {
                state.containers[container] = buckets
            }
            return nil
        }
        if let refusal { throw failure(refusal, direction) }
    }

    /// The refusal's answer: whole seconds to come back after, at most `longestRetryAfter`.
    private func failure(_ refusal: Refusal, _ direction: Direction) -> WireFailure {
        state.withLock { $0.counts.refusals += 1 }
        let delay: Duration
        let server: Bool
        switch refusal {
        case .container(let wait):
            delay = wait
            server = false
        case .server(let wait):
            delay = wait
            server = true
        }
        // Whole seconds, not counting the bucket's rounding nanosecond.
        let seconds = min(Self.longestRetryAfter, max(1, Int((delay.inSeconds - 1e-6).rounded(.up))))
        let what = direction == .upload ? "upload" : "download"
        let whose = server ? "the server's total" : "the container's"
        return WireFailure(
            server ? .unavailable : .tooManyRequests,
            "\(whose) \(what) bandwidth limit is used up; retry in \(seconds) s",
            headers: [.retryAfter: String(seconds)])
    }

    private static func fresh(_ settings: Settings, now: Duration) -> (upload: TokenBucket, download: TokenBucket) {
        (
            TokenBucket(rate: settings.perContainerUpload?.bytesPerSecond, now: now),
            TokenBucket(rate: settings.perContainerDownload?.bytesPerSecond, now: now)
        )
    }
}

/// `serve`'s bandwidth limits in bytes per second (nil: none): per container and for the whole
/// server, each way (`ServerBandwidth`).
public struct ServerBandwidthLimits: Sendable, Equatable {
    package var perContainerUpload: BandwidthRate?
    package var perContainerDownload: BandwidthRate?
    package var totalUpload: BandwidthRate?
    package var totalDownload: BandwidthRate?

    public init() {}

    package var isEmpty: Bool {
        perContainerUpload == nil && perContainerDownload == nil && totalUpload == nil && totalDownload == nil
    }
}
