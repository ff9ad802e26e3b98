import HTTPTypes
import SyncBackend
import Synchronization

/// The server's bandwidth limits on chunk bytes (`serve --upload-limit`, `--download-limit` per
/// container; `--total-upload-limit`, `--total-download-limit` for the whole server). Upload:
/// the chunk payloads clients send to `PUT .../chunks/HASH`; download: those `GET
/// .../chunks/HASH` sends back. One token bucket per container and direction, one per direction
/// for the server (`TokenBucket`: a burst of one second, a chunk larger than it goes and leaves a
/// debt).
///
/// As every other limit of the server (`ServerLimits`), it answers at once and never queues: a
/// chunk request that comes while its container's bucket (or the server's) is in debt is refused
/// before its body is read or its chunk fetched — `429 tooManyRequests` for the container, `503
/// unavailable` for the server, each with `Retry-After` the whole seconds until the debt is paid
/// — and the client comes back then (`BusyBackoff`). So no connection or task is held waiting,
/// and a limit only delays, it never drops. Requests without chunk bytes are not counted.
final class ServerBandwidth: Sendable {
    enum Direction: Sendable { case upload, download }

    typealias Settings = ServerBandwidthLimits

    /// Chunk bytes counted and requests refused so far, per direction (tests, logs).
    struct Counts: Sendable, Equatable {
        var uploadedBytes: Int64 = 0
        var downloadedBytes: Int64 = 0
        var refusals = 0
    }

    private struct State {
        var containers: [String: (upload: TokenBucket, download: TokenBucket)] = [:]
        var totalUpload: TokenBucket
        var totalDownload: TokenBucket
        var counts = Counts()
    }

    let settings: Settings
    private let state: Mutex<State>
    private let clock: @Sendable () -> Duration

    static let origin = ContinuousClock.now

    init(_ settings: Settings, clock: @escaping @Sendable () -> Duration = { ContinuousClock.now - origin }) {
        self.settings = settings
        self.clock = clock
        let now = clock()
        state = Mutex(
            State(
                totalUpload: TokenBucket(rate: settings.totalUpload?.bytesPerSecond, now: now),
                totalDownload: TokenBucket(rate: settings.totalDownload?.bytesPerSecond, now: now)))
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// Refuses the request if `container`'s bucket or the server's is in debt in `direction`.
    func admit(_ direction: Direction, container: String) throws(WireFailure) {
        let now = clock()
        let refusal = state.withLock { state -> (Duration, server: Bool)? in
            let own = containerDelay(container, direction, state: state, now: now)
            let total = (direction == .upload ? state.totalUpload : state.totalDownload).delay(now: now)
            guard own > .zero || total > .zero else { return nil }
            state.counts.refusals += 1
            return (max(own, total), server: total > own)
        }
        guard let (delay, server) = refusal else { return }
        // Whole seconds, not counting the bucket's rounding nanosecond.
        let seconds = max(1, Int((delay.inSeconds - 1e-6).rounded(.up)))
        let what = direction == .upload ? "upload" : "download"
        let whose = server ? "the server's total" : "the container's"
        throw WireFailure(
            server ? .unavailable : .tooManyRequests,
            "\(whose) \(what) bandwidth limit is used up; retry in \(seconds) s",
            headers: [.retryAfter: String(seconds)])
    }

    /// Counts `bytes` of chunk payload gone `direction` for `container` (may leave a debt).
    func count(_ bytes: Int, _ direction: Direction, container: String) {
        let now = clock()
        state.withLock { state in
            let limit = direction == .upload ? settings.perContainerUpload : settings.perContainerDownload
            if limit != nil {
                var buckets = state.containers[container] ?? Self.fresh(settings, now: now)
                if direction == .upload {
                    buckets.upload.take(Int64(bytes), now: now)
                } else {
                    buckets.download.take(Int64(bytes), now: now)
                }
                state.containers[container] = buckets
            }
            if direction == .upload {
                state.totalUpload.take(Int64(bytes), now: now)
                state.counts.uploadedBytes += Int64(bytes)
            } else {
                state.totalDownload.take(Int64(bytes), now: now)
                state.counts.downloadedBytes += Int64(bytes)
            }
        }
    }

    /// How long until `container`'s debt in `direction` is paid (zero without a bucket yet).
    private func containerDelay(_ container: String, _ direction: Direction, state: State, now: Duration) -> Duration {
        guard let buckets = state.containers[container] else { return .zero }
        return (direction == .upload ? buckets.upload : buckets.download).delay(now: now)
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
