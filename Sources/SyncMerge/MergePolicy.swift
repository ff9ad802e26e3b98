/// What to do when the same file changed on two machines since their common base.
///
/// A rule in the rules file (`MergeRules`) names one policy per glob; `MergeRules.policy(forPath:isText:)`
/// picks the policy for a file. The content policies (`text`, `json`, `union`) are implemented by
/// `ThreeWayMerge`; the others are decisions the caller carries out.
public enum MergePolicy: Equatable, Sendable {
    /// `merge=text`: three-way line merge (`ThreeWayMerge.text`). With `markers: true`
    /// (`merge=text conflict=markers`) overlapping changes are written into the file git-style
    /// instead of keeping both versions.
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
    /// `merge=keep-both`: both versions are kept (the losing one as a conflict copy).
    case keepBoth
    /// `merge=command:NAME [timeout=SECONDS]`: the merge program this machine defines under NAME
    /// (`MergeCommandTable`, local and unsynced; a rules file only names it). The text after
    /// `command:` as written (a rules file of an older version may hold a whole command line
    /// there: it names nothing, and such a merge keeps both). `timeoutSeconds`: the rule's
    /// `timeout=`, which can only shorten the definition's (`Definition.effectiveTimeout`).
    case command(String, timeoutSeconds: Int?)

    /// The timeout of a merge command whose definition has no `timeout=`.
    public static let defaultCommandTimeoutSeconds = 30

    /// Whether the policy merges content, and so needs every side to be text (`ContentSniffer`).
    public var needsText: Bool {
        switch self {
        case .text, .json, .union: return true
        case .newest, .local, .remote, .keepBoth, .command: return false
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
