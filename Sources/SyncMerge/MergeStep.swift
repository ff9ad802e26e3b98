/// The two changed versions of a file and their base, as a merge step sees them.
public struct MergeVersions: Sendable {
    /// The bytes of the three versions, read whole.
    public struct Content: Sendable {
        public var base: [UInt8]
        public var local: [UInt8]
        public var remote: [UInt8]
        /// Whether all three are text (`ContentSniffer.isText`).
        public let isText: Bool

        public init(base: [UInt8], local: [UInt8], remote: [UInt8]) {
            self.base = base
            self.local = local
            self.remote = remote
            isText = [base, local, remote].allSatisfy(ContentSniffer.isText)
        }
    }

    /// The bytes, when read (nil: not read, as the file is too large to merge; a policy that
    /// needs them falls through).
    public var content: Content?
    public var localSize: Int64
    public var remoteSize: Int64
    /// Modification times (nanoseconds since the epoch).
    public var localModified: Int64
    public var remoteModified: Int64

    public init(
        content: Content? = nil, localSize: Int64, remoteSize: Int64, localModified: Int64, remoteModified: Int64
    ) {
        self.content = content
        self.localSize = localSize
        self.remoteSize = remoteSize
        self.localModified = localModified
        self.remoteModified = remoteModified
    }
}

/// What one step of a `MergeChain` made of the versions.
public enum MergeStepOutcome: Equatable, Sendable {
    /// The local version wins.
    case local
    /// The remote version wins.
    case remote
    /// New content made from both. `markers`: it holds conflict markers.
    case merged([UInt8], markers: Bool)
    /// Both versions are kept.
    case keepBoth
    /// The step cannot decide (why, for the conflict copy's note): the next step decides.
    case fallThrough(String)
}

extension MergePolicy {
    /// What this step makes of `versions`. Pure: the same versions give the same outcome.
    /// `.command` runs a program, which is the caller's to do: here it only falls through.
    public func decide(_ versions: MergeVersions) -> MergeStepOutcome {
        switch self {
        case .local: return .local
        case .remote: return .remote
        case .keepBoth: return .keepBoth
        case .newest: return versions.localModified > versions.remoteModified ? .local : .remote
        case .larger, .smaller, .maximum, .minimum: return Preference.decide(self, versions)
        case .command: return .fallThrough("\(self) is run by the caller")
        case .text(let markers):
            return Self.ifText(versions) { content in
                let result = ThreeWayMerge.text(
                    base: content.base, local: content.local, remote: content.remote, markers: markers)
                guard case .merged(let bytes) = result.outcome else {
                    return .fallThrough("both changed the same lines")
                }
                return .merged(bytes, markers: result.hadConflicts)
            }
        case .json:
            return Self.ifText(versions) { content in
                guard
                    case .merged(let bytes) = ThreeWayMerge.json(
                        base: content.base, local: content.local, remote: content.remote)
                else { return .fallThrough("both changed the same JSON keys (or a version is not valid JSON)") }
                return .merged(bytes, markers: false)
            }
        case .union:
            return Self.ifText(versions) { content in
                .merged(
                    ThreeWayMerge.union(base: content.base, local: content.local, remote: content.remote),
                    markers: false)
            }
        }
    }

    /// `merge` of the versions' content when it was read and is text; else a fall-through.
    private static func ifText(
        _ versions: MergeVersions, _ merge: (MergeVersions.Content) -> MergeStepOutcome
    ) -> MergeStepOutcome {
        guard let content = versions.content else {
            return .fallThrough("both changed the content; too large to merge")
        }
        guard content.isText else { return .fallThrough("both changed the content; a version is not text") }
        return merge(content)
    }
}
