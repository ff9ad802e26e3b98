import Logging
import SyncBackend
import Synchronization

/// The follower's side of the inotify echo (see `InotifyEcho`): structural remote changes handed
/// to the echo thread, content and attribute changes touched after they were applied. The
/// follower's own code plans and applies each change (`RemoteApplying`); the kernel's side is
/// `EchoCall`.
///
/// A burst — a feed page of `burstSize` changes or more: a catch-up, a first attach, a folder
/// copied in elsewhere — skips the echo while no process may be watching the mount
/// (`WatcherCensus`, looked at again every 100 ms): each echoed change costs about eight FUSE
/// round trips, and a catch-up of 100,000 changes spent 40 s in them. Smaller pages, the everyday
/// path, are always echoed (doc/decisions/033).
final class RemoteEcho: Sendable {
    /// The smallest page that is a burst.
    static let burstSize = 64

    private struct Burst {
        /// The page being applied is a burst.
        var active = false
        /// Its changes skip the echo (what was last logged).
        var skipping = false
        /// The processes the census could not inspect were logged (once per mount).
        var uninspectedLogged = false
    }

    private let channel: EchoChannel
    private let live: LiveTree
    private let logger: Logger
    private let burst = Mutex(Burst())

    init(channel: EchoChannel, live: LiveTree, logger: Logger) {
        self.channel = channel
        self.live = live
        self.logger = logger
    }

    /// `entry` applied with the echo on, by `applier`: structural changes go through the mount,
    /// content and attribute changes are applied and then touched. Falls back to applying
    /// directly whenever the echo cannot do its part. Never holds the namespace lock while
    /// calling into the mount. Nil when the echo is off (the caller applies directly).
    func apply(_ entry: RemoteEntry, contentFile: String?, force: Bool, by applier: some RemoteApplying)
        -> RemotePlan?
    {
        guard let echo = channel.current, !skipsUnwatchedBurst() else { return nil }
        echo.turn.lock()
        defer { echo.turn.unlock() }
        var application = RemoteApplication(wantsTouch: true)
        let (step, directOutcome) = live.transact { tree -> (EchoStep?, RemotePlan?) in
            let decision = applier.plan(entry, force: force, tree: &tree)
            guard case .apply(let needsContent) = decision, !(needsContent && contentFile == nil) else {
                return (nil, decision)
            }
            if echo.isAvailable, let step = Self.throughStep(for: entry, in: tree) { return (step, nil) }
            return (
                nil,
                applier.applyRemoteLocked(
                    entry, contentFile: contentFile, force: force, tree: &tree, into: &application)
            )
        }
        var outcome: RemotePlan
        if let directOutcome {
            outcome = directOutcome
        } else if let step {
            let change = PendingRemoteChange(
                entry: entry, contentFile: contentFile, force: force, step: step, applier: applier)
            if let handled = carry(change, through: echo) {
                (outcome, application) = handled
            } else {
                outcome = live.transact { tree in
                    change.apply(tree: &tree, into: &application)
                }
            }
        } else {
            outcome = .later
        }
        live.perform(application.invalidations)
        if case .apply = outcome, let touch = application.touch {
            _ = echo.run { echo.perform(touch) }
        }
        return outcome
    }

    /// The follower is about to apply a feed page of `count` changes (a burst if `burstSize` or
    /// more; the answer holds for the page's retries too).
    func beginPage(of count: Int) {
        burst.withLock { burst in
            burst.active = count >= Self.burstSize
            if !burst.active { burst.skipping = false }
        }
    }

    /// The follower caught up: what is applied until the next page (a merge's result) is no burst.
    func caughtUp() { beginPage(of: 0) }

    /// True if the change about to be applied skips the echo: a burst that no process may be
    /// watching. Logs each change between echoing and skipping.
    private func skipsUnwatchedBurst() -> Bool {
        guard burst.withLock({ $0.active }) else { return false }
        let finding = channel.watchers
        let skip = !finding.watched
        let (changed, logUninspected) = burst.withLock { burst -> (Bool, Bool) in
            defer {
                burst.skipping = skip
                if skip && !finding.uninspected.isEmpty { burst.uninspectedLogged = true }
            }
            return (burst.skipping != skip, skip && !finding.uninspected.isEmpty && !burst.uninspectedLogged)
        }
        if changed && skip {
            logger.info("a burst of remote changes: no process watches the mount, so no inotify echo for them")
        } else if changed {
            logger.info("a process watches the mount: the rest of the burst of remote changes is echoed")
        }
        if logUninspected {
            logger.notice(
                "the inotify echo skips bursts, but these processes' descriptors cannot be inspected: \(finding.uninspected.joined(separator: ", ")); if one of them watches the mount, mount with --inotify-echo-always"
            )
        }
        return skip
    }

    /// Leaves `change` pending and has the echo thread make its call on the mount; returns what
    /// the FUSE handler serving that call made of it, or nil if the handler did not apply it (the
    /// call failed, timed out or was not recognised): the caller then applies it directly.
    private func carry(_ change: PendingRemoteChange, through echo: InotifyEcho) -> (RemotePlan, RemoteApplication)? {
        echo.pending.withLock { $0 = .waiting(change) }
        let result = echo.run { echo.perform(change.step) }
        let handled = echo.pending.withLock { slot -> (RemotePlan, RemoteApplication)? in
            defer { slot = .empty }
            if case .done(let plan, let applied) = slot { return (plan, applied) }
            return nil
        }
        if handled == nil, let result, result != 0 {
            logger.debug("inotify echo of \(change.entry.id) failed (errno \(result)); applying directly")
        }
        return handled
    }

    /// The VFS call that applies `entry` through the mount, if it is a create, delete or move the
    /// kernel can see as such; nil for changes applied directly (content, attributes, a name taken
    /// by another local entry, a directory that keeps local entries, a location that cannot be
    /// named below the mount).
    private static func throughStep(for entry: RemoteEntry, in tree: TreeTransaction) -> EchoStep? {
        let node = tree.node(withID: entry.id).flatMap { $0.isUnlinked ? nil : $0 }
        // Out of sight (a folder excluded here): nothing to echo through the mount point.
        if let node, tree.isExcluded(node) { return nil }
        if entry.isDeleted {
            guard let node, node.ino != .root, node.parent != nil else { return nil }
            if node.kind == .directory && !node.children.isEmpty { return nil }
            return EchoLocation(of: node, in: tree).map { .remove($0, isDirectory: node.kind == .directory) }
        }
        guard entry.id != .root, let parentID = entry.state.parent, let parent = tree.node(withID: parentID),
            !parent.isUnlinked, !tree.isExcluded(parent)
        else { return nil }
        let name = FileName(bytes: entry.state.name)
        if let occupant = tree.child(of: parent, named: name), occupant.fileID != entry.id { return nil }
        guard let destination = EchoLocation(of: parent, in: tree).flatMap({ $0.child(name) }) else { return nil }
        guard let node else {
            return .create(destination, kind: entry.state.kind, target: entry.state.symlinkTarget)
        }
        guard node.parent != parent.ino || node.name != name else { return nil }
        return EchoLocation(of: node, in: tree).map { .move(from: $0, to: destination) }
    }
}
