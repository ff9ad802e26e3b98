/// The kernel's operations' one seam with the inotify echo: each operation the echo thread makes
/// on the mount (mknod, mkdir, symlink, unlink, rmdir, rename, setattr, open) begins with
///
///     if let echoed = echo.request(from: caller) { return try echoed.… }
///
/// which is one atomic load for every other caller. The echo thread's calls are answered by
/// `EchoCall`; the echo is started and stopped through `channel`, which the follower shares.
final class EchoRequests: Sendable {
    /// The running echo and its thread's id, shared with the follower (`RemoteEcho`) and the
    /// tree (`LiveTree.perform` waits for its calls).
    let channel: EchoChannel
    let live: LiveTree
    let cache: ContentCache

    init(channel: EchoChannel, live: LiveTree, cache: ContentCache) {
        self.channel = channel
        self.live = live
        self.cache = cache
    }

    /// The call as the echo's to answer, if `caller` is the echo thread; nil for anybody else.
    @inline(__always)
    func request(from caller: Caller) -> EchoCall? {
        channel.isEchoRequest(pid: caller.pid) ? EchoCall(requests: self) : nil
    }
}
