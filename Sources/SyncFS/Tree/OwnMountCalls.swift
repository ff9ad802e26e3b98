/// The calls this daemon makes on its own mount point (the inotify echo's, `Echo/`), as the
/// tree's kernel invalidations must see them: such a call may hold a directory lock in the
/// kernel while it waits for this daemon's answer (see `LiveTree.perform`).
protocol OwnMountCalls: Sendable {
    /// Returns once none of these calls is in the kernel (at once when there is none, or once
    /// they stopped); waits on a condition, without polling.
    func waitWhileCallInKernel()
}
