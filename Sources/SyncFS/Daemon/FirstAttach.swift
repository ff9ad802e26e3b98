import Foundation
import Glibc
import Logging
import SyncBackend

/// The daemon's side of a first attach (doc/SEMANTICS.md, "The first mount attaches the tree";
/// `TreeAttach`): a state directory whose tree is not attached yet is served only once the
/// engine's follower reached the end of the container's change feed. Meanwhile nothing is
/// mounted (a script's `mount && cp` waits), the progress goes to the log, to systemd
/// (`STATUS=attaching: N entries`, with `EXTEND_TIMEOUT_USEC` while it moves) and, with
/// `reportAttachProgress`, to standard output as `attaching N` lines for the command that
/// started the daemon in the background (it draws them on a terminal).
public enum FirstAttach {
    /// The progress line on the daemon's standard output before `ready` (`AttachProgressDisplay`
    /// in the command line reads it): this prefix, then the entries handled so far.
    public static let progressPrefix = "attaching "

    /// Waits for `engine`'s attach if this mount needs one; throws `unreachable` (exit 75) when
    /// the follower made no progress for `configuration.attachTimeout` seconds while failing.
    static func waitIfNeeded(
        _ engine: SyncEngine, configuration: MountConfiguration, systemd: SystemdNotifier?, logger: Logger
    ) throws(MountError) {
        guard engine.attaching.attach.isNeeded else { return }
        let started = ContinuousClock.now
        logger.info("attaching the container's tree (the mount is served once it is complete)")
        var lastLogged = ContinuousClock.now
        var lastEntries = 0
        let outcome = engine.attaching.waitUntilAttached(stallLimit: .seconds(configuration.attachTimeout)) { entries in
            if configuration.reportAttachProgress {
                let line = progressPrefix + "\(entries)\n"
                _ = write(STDOUT_FILENO, line, line.utf8.count)
            }
            // Moving: systemd's start timeout is pushed 30 s further each second.
            let extend = entries != lastEntries ? "\nEXTEND_TIMEOUT_USEC=30000000" : ""
            systemd?.send("STATUS=attaching: \(entries) entries" + extend)
            lastEntries = entries
            if ContinuousClock.now - lastLogged >= .seconds(5) {
                lastLogged = ContinuousClock.now
                logger.info("attaching: \(entries) entries so far")
            }
        }
        let seconds = (ContinuousClock.now - started).inSeconds
        switch outcome {
        case .attached(let entries):
            logger.info("attached the container's tree: \(entries) entries in \(String(format: "%.2f", seconds)) s")
        case .stalled(let entries, let reason):
            throw MountError(
                .unreachable,
                "could not attach the container's tree: no progress for \(Int(configuration.attachTimeout)) s "
                    + "(\(reason)); nothing was mounted. The \(entries) entries attached so far are kept: mount "
                    + "again once the container answers (--attach-timeout sets how long a first mount waits)")
        }
    }
}
