import SyncMerge

/// What the uploader does with a queued change under the mount's ignore rules
/// (doc/SEMANTICS.md, "Ignored paths on a mount"), decided when it takes the change from the
/// entry's local path now and the path the container has it at.
enum IgnoreVerdict: Equatable, Sendable {
    /// Not ignored: uploaded as any change.
    case upload
    /// Ignored and never uploaded: the entry is local to this mount.
    case localOnly(IgnoreMatch)
    /// Ignored here and at its path in the container: the container keeps it as it is (a local
    /// edit or delete of it is held, never sent).
    case held(IgnoreMatch)
    /// A file or symlink renamed here from a synced path to an ignored name (in a folder that is
    /// not ignored): it left the synced set, and the container's entry is deleted (kept in its
    /// history) unless the container changed it since.
    case leftSyncedSet
    /// Never uploaded, below a folder whose `.syncfs-ignore` cannot be read yet: it waits for it.
    case waiting(folder: String)

    /// Whether the change stays queued without being sent.
    var isHeld: Bool {
        switch self {
        case .localOnly, .held, .waiting: true
        case .upload, .leftSyncedSet: false
        }
    }
}

/// The decision table of `IgnoreVerdict`, as a pure function.
enum IgnoreDecision {
    /// `local`: the entry's path here, nil if deleted here. `container`: its path in the
    /// container, nil if never committed. `waitingFolder`: the folder above `local` whose ignore
    /// file cannot be read yet, if any.
    static func decide(
        local: String?, container: String?, isDirectory: Bool, rules: IgnoreRules, waitingFolder: String? = nil
    ) -> IgnoreVerdict {
        let containerMatch = container.flatMap { ignoring($0, isDirectory, rules) }
        guard let local else {
            // Deleted here: a delete of an entry the container keeps as ignored is held.
            return containerMatch.map { .held($0) } ?? .upload
        }
        guard let localMatch = ignoring(local, isDirectory, rules) else {
            if container == nil, let waitingFolder { return .waiting(folder: waitingFolder) }
            return .upload
        }
        guard container != nil else { return .localOnly(localMatch) }
        // Only a file or symlink that was itself renamed to an ignored name leaves the synced
        // set. A folder renamed to an ignored name is held, not deleted (its entries are still
        // synced in the container, and a delete of them all is not what a rename asked for), and
        // so is every entry below it or moved into an ignored folder: their edits are held too.
        guard containerMatch == nil, !isDirectory, !isBelowIgnoredFolder(local, rules) else {
            return .held(localMatch)
        }
        return .leftSyncedSet
    }

    /// Whether a folder above `path` is ignored (what ignores `path` is then its folder).
    private static func isBelowIgnoredFolder(_ path: String, _ rules: IgnoreRules) -> Bool {
        guard let slash = path.lastIndex(of: "/") else { return false }
        return ignoring(String(path[..<slash]), true, rules) != nil
    }

    /// The line that ignores `path`, nil if it is not ignored.
    private static func ignoring(_ path: String, _ isDirectory: Bool, _ rules: IgnoreRules) -> IgnoreMatch? {
        guard let match = rules.match(path, isDirectory: isDirectory), match.ignored else { return nil }
        return match
    }
}
