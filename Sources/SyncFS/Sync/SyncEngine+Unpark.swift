import SyncBackend

/// An entry this device parked (`ParkingName`) whose real commit never came: the attempt that
/// parked it ended in a backoff (an outage, say), and the local change that would have renamed
/// it was overtaken (deleted here, then brought back because another mount put something in
/// it). Nothing else would ever rename it, so every mount would keep the temporary name. The
/// device that parked it, once nothing of its own is queued for the entry, renames it back to
/// its last real name in the container's history; other devices leave a parked entry alone (its
/// parking device may be in the middle of the rotation).
extension SyncEngine {
    /// Renames `entry` back to its real name if it is live under its parking name, was parked by
    /// this device, and no change of it is queued here. Best effort: a container that keeps no
    /// history, or fails to answer, leaves the name (logged).
    func unparkIfAbandoned(_ entry: RemoteEntry) {
        guard ParkingName.isParked(entry), entry.device == fileSystem.deviceIdentity,
            !fileSystem.outbox.isPending(entry.id)
        else { return }
        let versions: [HistoricVersion]
        do {
            versions = try history.versions(of: entry.id)
        } catch {
            logger.notice("\(logName(entry.id)) is left under its temporary name: \(error)")
            return
        }
        let parkingName = ParkingName.of(entry.id)
        guard let real = versions.first(where: { !$0.entry.isDeleted && $0.entry.state.name != parkingName }) else {
            logger.notice("\(logName(entry.id)) is left under its temporary name: no real name in its history")
            return
        }
        if let given = uploads.unpark(entry.id, to: FileName(bytes: real.entry.state.name)) {
            logger.notice("\(logName(entry.id)) was left under its temporary name; renamed back to \(given)")
        }
    }
}
