/// What a member of a container may do there, as the server enforces it on every endpoint.
///
/// - `viewer`: read — the container's info, entries, the change feed and its long poll, chunks,
///   history, the trash, the digest and the locks held.
/// - `editor`: a viewer's rights, and change — chunk uploads, commits (restores are commits),
///   locks.
/// - `admin`: an editor's rights, and run the container — members, share links, retention,
///   collection and quotas.
///
/// Roles are ordered (`viewer < editor < admin`); a token's role is at most its holder's
/// membership, and the server uses the lower of the two on every request.
public enum AccessRole: String, Codable, Sendable, CaseIterable, Comparable {
    case viewer
    case editor
    case admin

    public static func < (left: AccessRole, right: AccessRole) -> Bool { left.rank < right.rank }

    private var rank: Int {
        switch self {
        case .viewer: return 0
        case .editor: return 1
        case .admin: return 2
        }
    }

    /// The role with its article, for messages: "a viewer", "an editor", "an admin".
    public var withArticle: String { self == .viewer ? "a viewer" : "an \(rawValue)" }

    /// Whether this role may change the container's content (upload chunks, commit, lock).
    public var canWrite: Bool { self >= .editor }
}
