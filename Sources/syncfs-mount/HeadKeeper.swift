import Dispatch
import Logging
import SyncSealed
import Synchronization

/// Keeps a mount's ledger heads on disk (the state directory's `sealed-head` and the device's
/// record) off the sync path: a new head is handed over at once and written by a thread of its
/// own, the newest one winning when heads come faster than the disk. The files are synced, and a
/// sync on the file system of the content cache would otherwise make each commit and each read
/// of the feed wait for that cache's data. A head not written yet when the daemon dies leaves the
/// one before on disk, which the ledger runs through all the same.
final class HeadKeeper: Sendable {
    private let write: @Sendable (LedgerHead) throws -> Void
    private let logger: Logger
    private let queue = DispatchQueue(label: "syncfs.sealed-head")
    /// The newest head handed over and not written yet.
    private let pending = Mutex<LedgerHead?>(nil)

    init(logger: Logger, write: @escaping @Sendable (LedgerHead) throws -> Void) {
        self.logger = logger
        self.write = write
    }

    func keep(_ head: LedgerHead) {
        let scheduled = pending.withLock { pending -> Bool in
            defer { pending = head }
            return pending != nil
        }
        if scheduled { return }
        queue.async { [self] in
            guard
                let newest = pending.withLock({ pending -> LedgerHead? in
                    defer { pending = nil }
                    return pending
                })
            else { return }
            do {
                try write(newest)
            } catch {
                logger.error("cannot keep the sealed container's ledger head: \(error)")
            }
        }
    }
}
