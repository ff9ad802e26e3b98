import Foundation
import SyncBackend

/// The bandwidth limits of one mount: one token bucket per direction, shared by every transfer
/// of chunk bytes (uploads, background downloads, reads of placeholders, restores), which all
/// pass through `BlockingContainer`. Bytes are counted as they go on the wire: the encoded
/// (compressed) chunk payloads.
///
/// Every transfer waits BEFORE it starts until its direction's bucket is out of debt (nothing is
/// taken while waiting), and is counted without waiting: an upload when it is about to be sent
/// (`beforeUpload`), a download once received (`afterDownload`: its size is known only then).
/// So a chunk already downloaded is never held back; a chunk larger than the burst still goes,
/// and the debt it leaves is waited out by whoever comes next (the average rate is the limit).
/// A wait also ends when the caller's `cancelled` turns true (looked at every
/// `cancelCheckInterval`): a download nobody wants any more does not keep waiting. The limits in force
/// are, per direction: the one `limit` set (`overrides`), else the schedule's entry in force,
/// else the plain `--upload-limit`/`--download-limit`; they are looked at again at every call
/// and at least once a second while waiting, so `limit` and a schedule boundary act at once on
/// transfers already waiting. `stop()` ends every wait (the transfer fails as `busy`, to be
/// retried after the next mount): unmounting never waits for a limit.
///
/// Cost on the transfer path: a lock and, with a schedule, one calendar lookup per chunk.
final class BandwidthLimiter: @unchecked Sendable {
    enum Direction: Sendable { case upload, download }

    private let condition = NSCondition()
    private var upload: TokenBucket
    private var download: TokenBucket
    private var configured: Configuration
    private var stopped = false
    private var waiters = 0
    private let clock: @Sendable () -> (monotonic: Duration, wall: Date)

    /// What the limits are made of.
    struct Configuration: Sendable, Equatable {
        /// `--upload-limit`, `--download-limit`.
        var plain = BandwidthLimits()
        /// `--limit-schedule`.
        var schedule = LimitSchedule.none
        /// Set by `limit` (kept in the state database): per direction, a rate or `off`; nil: not set.
        var overrides = BandwidthOverrides()
    }

    /// The limits now and where each comes from, for `status`.
    struct InForce: Sendable, Equatable {
        var limits: BandwidthLimits
        /// The schedule entry in force (as written), nil outside every window or without one.
        var scheduleEntry: String?
        var uploadSource: BandwidthSource
        var downloadSource: BandwidthSource
    }

    /// A real clock unless a test passes its own.
    init(
        _ configured: Configuration,
        clock: @escaping @Sendable () -> (monotonic: Duration, wall: Date) = { BandwidthLimiter.realClock() }
    ) {
        self.configured = configured
        self.clock = clock
        let now = clock()
        let limits = Self.inForce(configured, at: now.wall).limits
        upload = TokenBucket(rate: limits.upload?.bytesPerSecond, now: now.monotonic)
        download = TokenBucket(rate: limits.download?.bytesPerSecond, now: now.monotonic)
    }

    static let origin = ContinuousClock.now

    /// Monotonic time since `origin`, and the wall clock (for the schedule).
    static func realClock() -> (monotonic: Duration, wall: Date) { (ContinuousClock.now - origin, Date()) }

    /// Waits until an upload may go, then counts its `bytes` (sent next, without waiting).
    func beforeUpload(_ bytes: Int, cancelled: () -> Bool = { false }) throws(SyncFailure) {
        try awaitCredit(.upload, thenTake: bytes, cancelled: cancelled)
    }

    /// Waits until a download may start (nothing counted: see `afterDownload`).
    func beforeDownload(cancelled: () -> Bool = { false }) throws(SyncFailure) {
        try awaitCredit(.download, thenTake: 0, cancelled: cancelled)
    }

    /// Counts `bytes` just received; never waits (the next download waits out any debt).
    func afterDownload(_ bytes: Int) {
        condition.lock()
        defer { condition.unlock() }
        let now = clock()
        applyLimits(at: now)
        download.take(Int64(bytes), now: now.monotonic)
    }

    /// How often a wait looks at its caller's `cancelled`.
    static let cancelCheckInterval: Duration = .milliseconds(50)

    /// Waits (the lock held, but released while asleep) until `direction` has no debt, then
    /// takes `bytes`. Throws `busy` on `stop()` or when `cancelled()` turns true.
    private func awaitCredit(_ direction: Direction, thenTake bytes: Int, cancelled: () -> Bool) throws(SyncFailure) {
        condition.lock()
        defer { condition.unlock() }
        var now = clock()
        applyLimits(at: now)
        guard !stopped else { throw Self.stopping }
        waiters += 1
        defer { waiters -= 1 }
        while true {
            let delay = self[direction].delay(now: now.monotonic)
            if delay == .zero { break }
            guard !cancelled() else { throw Self.cancelled }
            _ = condition.wait(until: ConditionDeadline.after(min(delay, Self.cancelCheckInterval)))
            guard !stopped else { throw Self.stopping }
            now = clock()
            applyLimits(at: now)
        }
        self[direction].take(Int64(bytes), now: now.monotonic)
    }

    private static let cancelled = SyncFailure.container(.busy("the transfer was cancelled"))
    private static let stopping = SyncFailure.container(.busy("the mount is stopping"))

    private subscript(direction: Direction) -> TokenBucket {
        get { direction == .upload ? upload : download }
        set { if direction == .upload { upload = newValue } else { download = newValue } }
    }

    /// Brings the buckets to the limits in force at `now` (the lock held).
    private func applyLimits(at now: (monotonic: Duration, wall: Date)) {
        let limits = Self.inForce(configured, at: now.wall).limits
        if upload.rate != limits.upload?.bytesPerSecond {
            upload.setRate(limits.upload?.bytesPerSecond, now: now.monotonic)
        }
        if download.rate != limits.download?.bytesPerSecond {
            download.setRate(limits.download?.bytesPerSecond, now: now.monotonic)
        }
    }

    /// `limit`: sets the overrides; waiting transfers see them at once.
    func setOverrides(_ overrides: BandwidthOverrides) {
        condition.lock()
        defer { condition.unlock() }
        configured.overrides = overrides
        applyLimits(at: clock())
        condition.broadcast()
    }

    /// `limit`: changes the overrides with `change` and, if they changed, hands the result to
    /// `record` (to keep it), all under the limiter's lock: concurrent calls each build on the
    /// other's result and are recorded in the order they took effect. Waiting transfers see the
    /// new limits at once.
    func updateOverrides(_ change: (inout BandwidthOverrides) -> Void, record: (BandwidthOverrides) -> Void) {
        condition.lock()
        defer { condition.unlock() }
        var overrides = configured.overrides
        change(&overrides)
        guard overrides != configured.overrides else { return }
        configured.overrides = overrides
        applyLimits(at: clock())
        record(overrides)
        condition.broadcast()
    }

    var overrides: BandwidthOverrides {
        condition.lock()
        defer { condition.unlock() }
        return configured.overrides
    }

    /// The limits in force now, and why.
    var inForce: InForce {
        condition.lock()
        defer { condition.unlock() }
        return Self.inForce(configured, at: clock().wall)
    }

    /// Transfers waiting for their bytes to be paid now.
    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiters
    }

    /// The mount has a `--limit-schedule` (it does not change while mounted).
    var hasSchedule: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !configured.schedule.entries.isEmpty
    }

    /// Ends every wait, now and to come.
    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        condition.broadcast()
    }

    static func inForce(_ configured: Configuration, at date: Date) -> InForce {
        let entry = configured.schedule.entry(at: date)
        func pick(_ override: BandwidthRate??, _ scheduled: BandwidthRate??, _ plain: BandwidthRate?) -> (
            BandwidthRate?, BandwidthSource
        ) {
            if let override { return (override, .command) }
            if let scheduled { return (scheduled, .schedule) }
            return (plain, .option)
        }
        let up = pick(configured.overrides.upload, entry?.upload, configured.plain.upload)
        let down = pick(configured.overrides.download, entry?.download, configured.plain.download)
        return InForce(
            limits: BandwidthLimits(upload: up.0, download: down.0), scheduleEntry: entry?.text,
            uploadSource: up.1, downloadSource: down.1)
    }
}
