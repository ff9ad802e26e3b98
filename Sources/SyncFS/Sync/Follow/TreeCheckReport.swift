/// What one check of the mount's tree against its container found and corrected (`SyncEngine`'s
/// tree check; `syncfs-mount verify`, the `tree-corrected` event, the log).
public struct TreeCheckReport: Codable, Sendable, Equatable {
    /// Live entries the container's digest covers (the root not counted).
    public var entries: Int
    /// The tree applied here matched the container's digest at once: nothing was read or changed.
    var matched: Bool
    /// Paths removed here: entries the container has never held (a server that lied made them up),
    /// or holds as deleted. Nothing of them was uploaded.
    public var removed: [String] = []
    /// Paths brought back or set to the container's version (entries a server hid or altered).
    public var restored: [String] = []
    /// Entries still differing, each with why (refused by this mount, in use, a local change
    /// queued): the check is made again at the next switch of server or `verify`.
    public var unresolved: [String] = []
    /// The check could not be made (the container did not answer); nothing was changed.
    public var error: String?

    public init(entries: Int, matched: Bool) {
        self.entries = entries
        self.matched = matched
    }

    /// One line for the log and `verify`: what was found and done.
    public var summary: String {
        if let error { return "the tree could not be checked against the container: \(error)" }
        if matched { return "the tree matches the container (\(entries) entries)" }
        var parts: [String] = []
        if !removed.isEmpty {
            parts.append("removed \(removed.count) the container does not have (\(Self.list(removed)))")
        }
        if !restored.isEmpty { parts.append("restored \(restored.count) from the container (\(Self.list(restored)))") }
        if !unresolved.isEmpty { parts.append("\(unresolved.count) still differ (\(Self.list(unresolved)))") }
        if parts.isEmpty { return "the tree matches the container after re-reading its feed (\(entries) entries)" }
        return "the tree differed from the container: " + parts.joined(separator: "; ")
    }

    /// Whether the tree is now the container's as far as the check could tell.
    public var isConsistent: Bool { error == nil && unresolved.isEmpty }

    private static func list(_ items: [String]) -> String {
        let shown = items.prefix(5).joined(separator: ", ")
        return items.count > 5 ? shown + ", …" : shown
    }
}
