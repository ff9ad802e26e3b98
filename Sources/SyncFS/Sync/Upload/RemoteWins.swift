import SyncBackend

/// The local change gives way (a conflict decided for the container, a `discard`): the
/// container's version is applied here, forced, and the queued change dropped.
struct RemoteWins: Sendable {
    let applier: RemoteApplier
    let outbox: Outbox
    let parked: ParkedEntries

    /// Makes the local entry the container's version, dropping its queued change; if that cannot
    /// happen yet (the file is open for writing), the item waits and is tried again; if the entry
    /// changed locally since the item was taken, nothing is dropped and the item goes again.
    func take(_ entry: RemoteEntry, replacing item: OutboxItem) throws(SyncFailure) {
        if try !applier.apply(entry, force: true, giving: item) {
            outbox.postpone(item, by: EngineDelay.remoteNotAppliedYet)
        } else if outbox.isPending(item.fileID) {
            // Written again meanwhile: the newer local change is uploaded (and merged) instead.
            outbox.postpone(item, by: .zero)
        } else {
            // A folder deleted here that came back (something was added to it elsewhere) while
            // it was parked: it comes back under its real name.
            parked.unparkAfterTakingRemote(entry)
        }
    }
}
