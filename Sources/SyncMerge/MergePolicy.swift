/// What to do when the same file changed on two machines since their common base: one step of a
/// rule's `MergeChain`.
///
/// A rule in the rules file (`MergeRules`) names a chain of policies per glob;
/// `MergeRules.chain(forPath:)` picks the chain for a file. Each policy either decides or falls
/// through to the next (`MergePolicy.decide`, `MergeStepOutcome`). The content policies (`text`,
/// `json`, `union`) are implemented by `ThreeWayMerge`; `command` is run by the caller.
public enum MergePolicy: Equatable, Sendable {
    /// `merge=text`: three-way line merge (`ThreeWayMerge.text`). With `markers: true`
    /// (`merge=text conflict=markers`) overlapping changes are written into the file git-style
    /// instead of falling through.
    case text(markers: Bool)
    /// `merge=json`: three-way structural merge of JSON (`ThreeWayMerge.json`).
    case json
    /// `merge=union`: the lines of both sides (`ThreeWayMerge.union`); never conflicts.
    case union
    /// `prefer=newest`: the version with the later modification time wins; a tie → remote.
    case newest
    /// `prefer=local`: the local version wins.
    case local
    /// `prefer=remote`: the remote version wins.
    case remote
    /// `prefer=larger`: the version with more bytes wins; a tie falls through.
    case larger
    /// `prefer=smaller`: the version with fewer bytes wins; a tie falls through.
    case smaller
    /// `prefer=max(json:POINTER)`: the version whose number at POINTER is greater wins; a tie, a
    /// missing value or a version that is not JSON falls through.
    case maximum(JSONPointer)
    /// `prefer=min(json:POINTER)`: the version whose number at POINTER is smaller wins; falls
    /// through like `maximum`.
    case minimum(JSONPointer)
    /// `merge=keep-both` (or `keep-both`): both versions are kept (the losing one as a conflict
    /// copy). The end of every chain.
    case keepBoth
    /// `merge=command:NAME [timeout=SECONDS]`: the merge program this machine defines under NAME
    /// (`MergeCommandTable`, local and unsynced; a rules file only names it). The text after
    /// `command:` as written (a rules file of an older version may hold a whole command line
    /// there: it names nothing, and such a merge falls through). `timeoutSeconds`: the rule's
    /// `timeout=`, which can only shorten the definition's (`Definition.effectiveTimeout`).
    case command(String, timeoutSeconds: Int?)

    /// The timeout of a merge command whose definition has no `timeout=`.
    public static let defaultCommandTimeoutSeconds = 30

    /// Whether the policy merges content as text, and so falls through unless every version is
    /// text (`ContentSniffer`).
    public var needsText: Bool {
        switch self {
        case .text, .json, .union: return true
        case .newest, .local, .remote, .larger, .smaller, .maximum, .minimum, .keepBoth, .command: return false
        }
    }

    /// Whether the policy reads the versions' bytes (not only their sizes and times).
    public var needsContent: Bool {
        switch self {
        case .text, .json, .union, .maximum, .minimum, .command: return true
        case .newest, .local, .remote, .larger, .smaller, .keepBoth: return false
        }
    }

    /// Whether the policy decides whatever the versions are: nothing after it in a chain is used.
    public var alwaysDecides: Bool {
        switch self {
        case .newest, .local, .remote, .keepBoth: return true
        case .text, .json, .union, .larger, .smaller, .maximum, .minimum, .command: return false
        }
    }
}

extension MergePolicy: CustomStringConvertible {
    /// The policy as a rules file writes it (`prefer=max(json:/score)`).
    public var description: String {
        switch self {
        case .text(let markers): return markers ? "merge=text conflict=markers" : "merge=text"
        case .json: return "merge=json"
        case .union: return "merge=union"
        case .newest: return "prefer=newest"
        case .local: return "prefer=local"
        case .remote: return "prefer=remote"
        case .larger: return "prefer=larger"
        case .smaller: return "prefer=smaller"
        case .maximum(let pointer): return "prefer=max(json:\(pointer))"
        case .minimum(let pointer): return "prefer=min(json:\(pointer))"
        case .keepBoth: return "merge=keep-both"
        case .command(let name, let timeout): return "merge=command:\(name)" + (timeout.map { " timeout=\($0)" } ?? "")
        }
    }
}

/// The outcome of a content merge.
public enum MergeOutcome: Equatable, Sendable {
    /// A clean result: the new content of the file.
    case merged([UInt8])
    /// Overlapping changes (or unparseable input): the caller keeps both versions.
    case conflicted
}

/// The result of `ThreeWayMerge.text`.
public struct TextMergeResult: Equatable, Sendable {
    /// `.merged` when the merge is clean or conflict markers were asked for; `.conflicted` otherwise.
    public var outcome: MergeOutcome
    /// True when at least one region changed differently on both sides (with markers: the result
    /// holds conflict markers).
    public var hadConflicts: Bool

    public init(outcome: MergeOutcome, hadConflicts: Bool) {
        self.outcome = outcome
        self.hadConflicts = hadConflicts
    }
}
