import SyncBackend

/// The remote change an echo step carries to the FUSE handler, and what the handler made of it
/// (`InotifyEcho.pending`; a leaf lock).
enum PendingSlot {
    case empty
    case waiting(PendingRemoteChange)
    case done(RemotePlan, RemoteApplication)
}

/// A remote change waiting for the echo thread's call on the mount: the FUSE handler that serves
/// the call checks that it is `step` and applies it in its own transaction.
struct PendingRemoteChange {
    let entry: RemoteEntry
    let contentFile: String?
    let force: Bool
    let step: EchoStep
    /// The follower, whose code applies the change (`RemoteApplying`).
    let applier: any RemoteApplying

    /// Applies the change inside the FUSE handler's transaction; returns the plan.
    func apply(tree: inout TreeTransaction, into application: inout RemoteApplication) -> RemotePlan {
        applier.applyRemoteLocked(entry, contentFile: contentFile, force: force, tree: &tree, into: &application)
    }
}
