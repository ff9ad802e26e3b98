import Glibc
import SyncBackend

/// Files a write into failed (`Node.writeFailure`; `ContentLifecycle.Modification.writeFailed`;
/// doc/SEMANTICS.md "Full disk").
///
/// A write whose bytes did not all land in the cache file (ENOSPC, EDQUOT, EIO) returns its
/// error to the program, and the file becomes write-failed: shown as `error`, named in `status`
/// and the log, never uploaded (`UploadRecords.prepareUpload` gets no permit), kept across
/// mounts (the `write_failures` fact). The bytes it holds stay readable here. It is left by a
/// truncation to 0 (`O_TRUNC`, `truncate`), after which every byte is one a program wrote, or by
/// removing the file. A successful write afterwards does not make it whole: its holes stay.
enum WriteFailures {
    /// Whether a write failing with `code` leaves the file holding bytes nobody vouches for
    /// (the disk is full or failed), rather than being refused before it wrote anything.
    static func marks(_ code: Int32) -> Bool { code == ENOSPC || code == EDQUOT || code == EIO }

    /// What `status` and the log say of a file whose write failed with `code`.
    static func reason(_ code: Int32) -> String {
        let cause =
            code == EIO
            ? "the disk holding the state directory failed"
            : "the disk holding the state directory is full"
        return "could not be saved: \(cause) (a write failed: \(String(cString: strerror(code))));"
            + " the file is not uploaded and the container's version is kept"
            + " (free some space, then write the file again with O_TRUNC, or remove it)"
    }

    /// Marks the files the `write_failures` fact names (at mount, once the tree is loaded).
    /// They are in motion (`Namespace.inMotion`) for as long as they stay write-failed.
    static func restore(_ failures: [FileID: Int32]?, in tree: inout Namespace) {
        for (id, code) in failures ?? [:] where code > 0 {
            guard let node = tree.node(withID: id), node.kind == .file else { continue }
            node.restoreWriteFailure(code)
            tree.inMotion.insert(node.ino)
        }
    }
}

extension TreeTransaction {
    /// A write into `node`'s cache file failed with `code`: the file becomes write-failed (its
    /// record and outbox row go to the store, so the refusal names it, and the fact keeps it).
    /// False if it already was.
    mutating func noteWriteFailed(_ node: Node, code: Int32) -> Bool {
        guard node.writeFailure == 0 else { return false }
        inMotion.insert(node.ino)
        node.apply(.writeFailed, queued: outbox.isPending(node.fileID), writeFailure: code)
        if !node.isUnlinked {
            recordLocalChange(node)
            recordWriteFailures()
        }
        return true
    }

    /// `node`, whose bytes are local (or lost), was truncated to 0 (`O_TRUNC`, `truncate`): the
    /// machine's `openedTruncating`, the way out of a failed write and of lost content — it holds
    /// only what programs write from now on. The caller empties the cache file and records the
    /// change (the transition's `emptyCacheFile` and `queueUpload`).
    mutating func truncatedToZero(_ node: Node) {
        let failed = node.writeFailure != 0
        node.apply(.openedTruncating, queued: outbox.isPending(node.fileID))
        if failed { recordWriteFailures() }
    }

    /// The write-failed files of the tree (unlinked ones are gone with their name). A write
    /// fails only through a handle that may write, so each is in motion (`inMotion`).
    func writeFailedNodes() -> [Node] {
        inMotion.compactMap { nodes[$0] }.filter { $0.writeFailure != 0 && !$0.isUnlinked }
    }

    /// Records the `write_failures` fact from the tree (cleared when there are none).
    mutating func recordWriteFailures() {
        var failures: [FileID: Int32] = [:]
        for node in writeFailedNodes() { failures[node.fileID] = node.writeFailure }
        record(.fact(.writeFailures, failures.isEmpty ? nil : failures))
    }
}
