import SyncBackend

/// The control socket's `limit` (doc/SEMANTICS.md, "Bandwidth limits").
extension ControlCommands {
    /// Sets the directions the request names (a RATE, or `off`), or with `reset` clears what
    /// `limit` set before; keeps the result in the state database and answers the status. A
    /// RATE that does not parse changes nothing (the error says why).
    func limitAnswer(_ request: ControlRequest) -> ControlReply {
        var overrides = request.reset == true ? BandwidthOverrides() : engine.limiter.overrides
        do throws(BandwidthRate.ParseError) {
            if let upload = request.upload { overrides.upload = .some(try BandwidthRate.parse(upload)) }
            if let download = request.download { overrides.download = .some(try BandwidthRate.parse(download)) }
        } catch {
            return ControlReply(error: error.description)
        }
        if overrides != engine.limiter.overrides {
            engine.limiter.setOverrides(overrides)
            fileSystem.store.factSet(.bandwidthOverrides, overrides.isEmpty ? nil : overrides)
        }
        return ControlReply(status: engine.status())
    }
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
