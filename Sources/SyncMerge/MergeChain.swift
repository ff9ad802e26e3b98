/// A rule's policies in order (`*.sav merge=json else prefer=newest`): the first decides unless
/// it cannot (`MergeStepOutcome.fallThrough`), then the next, and so on; when every step falls
/// through, both versions are kept (an implied `merge=keep-both` ends every chain).
///
/// Built by `RuleLine`, which holds a chain to its contract: 1…`maximumSteps` steps, at most one
/// `merge=command:`, and no step after one that always decides (`MergePolicy.alwaysDecides`).
public struct MergeChain: Equatable, Sendable, CustomStringConvertible {
    /// The most steps a rule may have (a rules file comes from other machines: its work is bounded).
    public static let maximumSteps = 8

    /// Never empty.
    public let steps: [MergePolicy]

    init(_ steps: [MergePolicy]) {
        precondition(!steps.isEmpty, "a merge chain has at least one step")
        self.steps = steps
    }

    /// The chain as a rules file writes it.
    public var description: String { steps.map(\.description).joined(separator: " else ") }
}

/// What a whole chain made of the versions (`MergeChain.decide`).
public enum MergeChainOutcome: Equatable, Sendable {
    /// The local version wins.
    case local
    /// The remote version wins.
    case remote
    /// New content made from both. `markers`: it holds conflict markers.
    case merged([UInt8], markers: Bool)
    /// Both versions are kept: a `merge=keep-both` step, or every step fell through. `reason`:
    /// the fall-through reasons in order, joined by "; " (none: the rule asked for it).
    case keepBoth(reason: String)
}

extension MergeChain {
    /// Walks the steps in order: the first step that does not fall through decides; when every
    /// step falls through, both versions are kept. `decideStep` decides one step (usually
    /// `MergePolicy.decide` on the versions; the caller runs `merge=command:` itself); when it
    /// answers nil the caller has its own answer (a command still running, say): the walk stops
    /// and answers nil.
    public func decide<Failure: Error>(_ decideStep: (MergePolicy) throws(Failure) -> MergeStepOutcome?)
        throws(Failure) -> MergeChainOutcome?
    {
        var reasons: [String] = []
        for step in steps {
            guard let outcome = try decideStep(step) else { return nil }
            switch outcome {
            case .local: return .local
            case .remote: return .remote
            case .merged(let bytes, let markers): return .merged(bytes, markers: markers)
            case .keepBoth:
                return .keepBoth(
                    reason: reasons.isEmpty
                        ? "both changed the content (policy keep-both)" : reasons.joined(separator: "; "))
            case .fallThrough(let reason): reasons.append(reason)
            }
        }
        return .keepBoth(reason: reasons.joined(separator: "; "))
    }
}
