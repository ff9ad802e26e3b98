/// What a container has to tell the person using a mount, for `status`.
public struct ContainerReport: Codable, Sendable, Equatable {
    /// How the container is encrypted end to end, in a line (its ledger head, key epoch and
    /// devices); nil for a container that is not.
    public var encryption: String?
    /// Why the container stopped being used (the server showed what no member made): nothing is
    /// applied or uploaded until it is resolved. Nil when all is well.
    public var alarm: String?

    public init(encryption: String? = nil, alarm: String? = nil) {
        self.encryption = encryption
        self.alarm = alarm
    }
}

/// A container with something to report (`ContainerReport`): an encrypted container.
public protocol ReportingContainer: Container {
    var report: ContainerReport { get }
    /// Calls `handler` with the alarm's text once, when an alarm is raised (at once if one was
    /// raised already), for the mount's event and log.
    func observeAlarm(_ handler: @escaping @Sendable (String) -> Void)
}
