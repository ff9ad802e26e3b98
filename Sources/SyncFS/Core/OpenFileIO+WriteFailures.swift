import Glibc
import SyncBackend

/// The write path's side of a full or failing disk (doc/SEMANTICS.md, "Full
/// disk"): a write that fails is the program's error and makes the file write-failed
/// (`WriteFailures`); while the state database's reserve is released, writes into files must
/// leave its room free (`SpaceReserve.admitting`).
extension OpenFileIO {
    /// Runs `write` (`count` bytes into a cache file) unless that would take the room kept for the
    /// state database (`SpaceReserve.admitting`); nil if refused.
    func admittedWrite(_ count: Int, _ write: () -> Int) -> Int? {
        guard let reserve = store.reserve else { return write() }
        return reserve.admitting(count, write)
    }

    /// A write into `node`'s cache file failed with `code`. If the bytes may not all have landed
    /// (`WriteFailures.marks`), the file becomes write-failed: committed durably (the reserve
    /// makes room), logged once, and its queued change taken at once so that the refused upload
    /// names it with the reason.
    func noteWriteFailed(_ node: Node, code: Int32) {
        guard WriteFailures.marks(code) else { return }
        let message = live.transact { tree -> String? in
            guard tree.noteWriteFailed(node, code: code) else { return nil }
            return "\(node.name) (file \(node.fileID)) \(WriteFailures.reason(code))"
        }
        guard let message else { return }
        // Committed at once: after a crash the mark must not be missing while the cache file is
        // longer than recorded (the mount would take the extra bytes, holes and all, as a change).
        do { try store.commit(durable: true) } catch { logger.error("could not record a failed write: \(error)") }
        logger.error("\(message)")
        outbox.expedite(node.fileID)
    }

    /// The files whose write failed, with the errno, for `status`.
    func writeFailedFiles() -> [(id: FileID, code: Int32)] {
        live.transact { tree in
            tree.writeFailedNodes().map { ($0.fileID, $0.writeFailure) }
        }
    }
}
