import SyncBackend

/// How the follower should treat one remote change (see `RemoteChanges.planRemote`).
enum RemotePlan: Equatable, Sendable {
    /// Already reflected locally (our own change coming back, or an older version).
    case skip
    /// The local entry has changes of its own not yet committed: the upload resolves it.
    case localChangesPending
    /// Cannot be applied yet (open for writing, parent missing locally, would make a cycle,
    /// directory still holds local entries): try again later.
    case later
    /// The parent is not known locally: fetch and apply it first.
    case needsParent(FileID)
    /// Apply it; download the content first if `needsContent`.
    case apply(needsContent: Bool)
    /// Never apply it: the entry breaks a rule (`RemoteEntryValidation`) or would change what an
    /// existing entry is (its kind). Nothing local changes; the reason is shown in `status`.
    case refused(String)
}
