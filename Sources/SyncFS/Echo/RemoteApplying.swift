import SyncBackend

/// What the echo needs of the follower (`RemoteChanges` conforms): the two calls it makes inside
/// a tree transaction, on the follower's thread or, for a change carried through the mount,
/// inside the FUSE handler that serves the echo thread's call (see `RemoteEcho`, `EchoCall`).
protocol RemoteApplying: Sendable {
    /// Decides what to do with `entry` against the tree; `force` ignores local changes.
    func plan(_ entry: RemoteEntry, force: Bool, tree: inout TreeTransaction) -> RemotePlan

    /// Plans `entry` again and, if the plan is still `apply`, applies it: the tree changed, the
    /// new base recorded, the change events published, the kernel invalidations collected in
    /// `tree` and the echo's touch put in `application`. Returns the plan.
    func applyRemoteLocked(
        _ entry: RemoteEntry, contentFile: String?, force: Bool, tree: inout TreeTransaction,
        into application: inout RemoteApplication
    ) -> RemotePlan
}

/// What applying one remote change produced besides the tree change itself.
struct RemoteApplication {
    /// Kernel invalidations to send once the namespace lock is dropped (and, for changes applied
    /// inside a FUSE handler, once the echo thread's call has returned).
    var invalidations: [KernelInvalidation] = []
    /// The echo is on: compute `touch`.
    var wantsTouch = false
    var touch: EchoTouch?
}
