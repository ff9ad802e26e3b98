/// The mount in one line — systemd's `STATUS=` (and `systemctl status`): online or offline, then
/// what the queue holds, e.g. "online, up to date", "offline, 3 changes waiting", or "online,
/// uploads held by the mass-delete guard (syncfs-mount release or discard), …". Cheap to make
/// (`SyncEngine.summary()` reads counters, never walks the tree), so it can be asked every second.
struct SyncSummary: Sendable, Equatable {
    var online: Bool
    var changesWaiting: Int
    var caughtUp: Bool
    var conflicts: Int
    /// The mass-delete guard holds the uploads: said first, with the way out.
    var guardHeld: Bool
    /// The mount is paused (`SyncPause`): said first, with the way out.
    var paused: Bool

    init(
        online: Bool, changesWaiting: Int, caughtUp: Bool, conflicts: Int, guardHeld: Bool = false,
        paused: Bool = false
    ) {
        self.online = online
        self.changesWaiting = changesWaiting
        self.caughtUp = caughtUp
        self.conflicts = conflicts
        self.guardHeld = guardHeld
        self.paused = paused
    }

    var line: String {
        let connection = online ? "online" : "offline"
        var line: String
        if paused {
            line = "paused (syncfs-mount resume), \(HumanUnits.count(changesWaiting, "change")) waiting"
        } else if guardHeld {
            line =
                "\(connection), uploads held by the mass-delete guard (syncfs-mount release or discard), "
                + "\(HumanUnits.count(changesWaiting, "change")) waiting"
        } else if changesWaiting > 0 {
            line = "\(connection), \(HumanUnits.count(changesWaiting, "change")) waiting"
        } else if !online {
            line = "offline, nothing waiting"
        } else {
            line = caughtUp ? "online, up to date" : "online, catching up"
        }
        if conflicts > 0 { line += ", \(HumanUnits.count(conflicts, "conflict"))" }
        return line
    }
}

extension SyncEngine {
    /// `SyncSummary` now: the queue's length, whether the container answers, whether the feed
    /// was caught up at the last look, and the unresolved conflict copies (from their index).
    func summary() -> SyncSummary {
        let caughtUp = progress.feedCaughtUp
        return SyncSummary(
            online: reachability.isOnline, changesWaiting: fileSystem.outbox.activeCount, caughtUp: caughtUp,
            conflicts: conflicts.unresolvedCount(), guardHeld: guarded.deleteGuard.isHeld,
            paused: pause.current != nil)
    }
}
