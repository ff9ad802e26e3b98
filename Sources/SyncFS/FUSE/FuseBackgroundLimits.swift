import CFuse

/// How many background requests the kernel keeps in flight to this daemon (`max_background`) and
/// from how many on it holds back optional readahead (`congestion_threshold`).
///
/// Background requests are those no task waits for in the request itself: readahead READs
/// (asynchronous reads are on, libfuse's default: `PendingRead` says how a signal still ends a
/// reader's wait for a download), write-back WRITEs and RELEASE. The kernel's default is 12 in
/// flight; past that the rest queue in the kernel, in order. A READ of a placeholder whose server
/// does not answer stays in flight until the download's deadline, so 12 waiting readers used to
/// leave no slot for anything else: the write-back of a new file on `close` (and so the `close`)
/// queued behind them (a create + write + close took 809 s with 40 readers on a stopped server).
/// The daemon answers such READs without a thread (`PendingRead`; `PendingReads` looks at each
/// reading thread's signals every 200 ms), so many in flight hold no thread; the limits are
/// raised so that readers of placeholders cannot starve other files' I/O.
enum FuseBackgroundLimits {
    static let maxBackground: UInt32 = 1024
    static let congestionThreshold: UInt32 = 768

    static func apply(to conn: UnsafeMutablePointer<fuse_conn_info>) {
        conn.pointee.max_background = maxBackground
        conn.pointee.congestion_threshold = congestionThreshold
    }
}
