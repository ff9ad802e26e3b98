import Logging
import SyncBackend
import Synchronization

/// An entry this device parked (`ParkingName`) whose real commit never came: the attempt that
/// parked it ended in a backoff (an outage, say), and the local change that would have renamed
/// it was overtaken (deleted here, then brought back because another mount put something in
/// it). Nothing else would ever rename it, so every mount would keep the temporary name. The
/// device that parked it, once nothing of its own is queued for the entry, renames it back to
/// its last real name in the container's history; other devices leave a parked entry alone (its
/// parking device may be in the middle of the rotation).
final class ParkedEntries: Sendable {
    private let uploads: UploadRecords
    private let history: HistoryReader
    private let deviceIdentity: String
    private let log: EngineLog
    /// Entries `unparkAfterTakingRemote` could not rename back yet: the follower takes them
    /// into its deferred entries (`takeRetries`).
    private let toRetry = Mutex<Set<FileID>>([])

    init(uploads: UploadRecords, history: HistoryReader, deviceIdentity: String, log: EngineLog) {
        self.uploads = uploads
        self.history = history
        self.deviceIdentity = deviceIdentity
        self.log = log
    }

    /// Renames `entry` back to its real name if it is live under its parking name here and in the
    /// container, no change of it is queued here, and this device parked it (the first version
    /// of the newest run of parked versions in its history is this device's: another mount may
    /// have changed it since, under that name). Returns false if it must be tried again later
    /// (the container's history could not be read now); the follower keeps such an entry with
    /// its deferred ones. A container that keeps no history leaves the name (logged).
    func unparkIfAbandoned(_ entry: RemoteEntry) -> Bool {
        // Cheap checks first: the follower asks for every entry it applies.
        guard ParkingName.isParked(entry), uploads.isParkedHere(entry.id) else { return true }
        let versions: [HistoricVersion]
        do {
            versions = try history.versions(of: entry.id)
        } catch {
            log.logger.notice("\(log.logName(entry.id)) is left under its temporary name for now: \(error)")
            return !error.isRetryable
        }
        let parkingName = ParkingName.of(entry.id)
        let parked = versions.prefix { !$0.entry.isDeleted && $0.entry.state.name == parkingName }
        guard let parking = parked.last, parking.entry.device == deviceIdentity else { return true }
        guard let real = versions.dropFirst(parked.count).first(where: { !$0.entry.isDeleted }) else {
            log.logger.notice("\(log.logName(entry.id)) is left under its temporary name: no real name in its history")
            return true
        }
        if let given = uploads.unpark(entry.id, to: FileName(bytes: real.entry.state.name)) {
            log.logger.notice("\(log.logName(entry.id)) was left under its temporary name; renamed back to \(given)")
        }
        return true
    }

    /// `unparkIfAbandoned` after `takeRemote`: an entry it must try again is handed to the
    /// follower's deferred entries (`takeRetries`).
    func unparkAfterTakingRemote(_ entry: RemoteEntry) {
        if !unparkIfAbandoned(entry) { toRetry.withLock { _ = $0.insert(entry.id) } }
    }

    /// The entries to try again, once each (the follower keeps them with its deferred ones).
    func takeRetries() -> Set<FileID> {
        toRetry.withLock { waiting in
            defer { waiting = [] }
            return waiting
        }
    }
}
