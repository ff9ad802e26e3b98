/// The calls this daemon makes on its own mount point (the inotify echo's, `Echo/`), as the
/// tree's kernel invalidations must see them: such a call may hold a directory lock in the
/// kernel while it waits for this daemon's answer (see `LiveTree.perform`).
protocol OwnMountCalls: Sendable {
    /// Runs `send` — invalidations that take a directory's lock in the kernel — once none of these
    /// calls is in the kernel, and lets none enter until it returned; waits on a condition,
    /// without polling. Returns false without running it if these calls stopped while one is
    /// still in the kernel (the session ended: it may never return, and the mount is going away).
    func whileNoCallInKernel(_ send: () -> Void) -> Bool
}
