import Dispatch
import SyncBackend

/// The control socket's `limit` (doc/SEMANTICS.md, "Bandwidth limits").
extension ControlCommands {
    /// Sets the directions the request names (a RATE, or `off`), or with `reset` clears what
    /// `limit` set before; keeps the result in the state database and answers the status once it
    /// is committed. A RATE that does not parse changes nothing (the error says why).
    func limitAnswer(_ request: ControlRequest) -> ControlReply {
        // Per direction: nil, not named; .some(nil), `off`.
        var upload: BandwidthRate?? = nil
        var download: BandwidthRate?? = nil
        do throws(BandwidthRate.ParseError) {
            if let text = request.upload { upload = .some(try BandwidthRate.parse(text)) }
            if let text = request.download { download = .some(try BandwidthRate.parse(text)) }
        } catch {
            return ControlReply(error: error.description)
        }
        let store = fileSystem.store
        engine.limiter.updateOverrides { overrides in
            if request.reset == true { overrides = BandwidthOverrides() }
            if let upload { overrides.upload = upload }
            if let download { overrides.download = download }
        } record: { overrides in
            store.factSet(.bandwidthOverrides, overrides.isEmpty ? nil : overrides)
        }
        let committed = DispatchSemaphore(value: 0)
        store.afterCommit { committed.signal() }
        _ = committed.wait(timeout: .now() + .seconds(Self.limitCommitWait))
        return ControlReply(status: engine.status())
    }

    /// How long `limit` waits for its change to be committed before it answers anyway (seconds).
    private static let limitCommitWait = 10
}

/// The bandwidth limits in force, for `status`.
public struct BandwidthStatus: Codable, Sendable {
    /// Bytes per second now; nil: no limit.
    public var upload: Int64?
    public var download: Int64?
    public var uploadSource: BandwidthSource
    public var downloadSource: BandwidthSource
    /// The `--limit-schedule` entry in force, as written; nil outside every window.
    public var scheduleEntry: String?
    /// The mount has a `--limit-schedule`.
    public var hasSchedule: Bool

    init(_ limiter: BandwidthLimiter) {
        let inForce = limiter.inForce
        upload = inForce.limits.upload?.bytesPerSecond
        download = inForce.limits.download?.bytesPerSecond
        uploadSource = inForce.uploadSource
        downloadSource = inForce.downloadSource
        scheduleEntry = inForce.scheduleEntry
        hasSchedule = limiter.hasSchedule
    }
}
