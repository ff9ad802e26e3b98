import SyncBackend
import Synchronization

extension ExtendedAttributes {
    /// `user.syncfs.state`, `.id`, `.pinned`, `.progress`, `.error` (doc/SEMANTICS.md): computed from
    /// the tree, the outbox and the transfer board; never stored, never synced. `.lock` comes from
    /// the mount's locks (`VirtualLockAttribute`), asked outside the namespace lock.
    func virtualXattr(_ ino: InodeNumber, name: String) throws(FSError) -> [UInt8] {
        let key = name.dropFirst(Self.virtualPrefix.count)
        if key == "lock" {
            let fileID = try live.transact { tree throws(FSError) in try tree.node(ino).fileID }
            guard let line = lockAttribute.line(for: fileID) else { throw .noAttribute }
            return Array(line.utf8)
        }
        return try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            switch key {
            case "state": return Array(residency.contentState(of: node, in: tree).rawValue.utf8)
            // The stable file ID: the same on every mount and across renames (`ChangeEvent.fileID`).
            case "id": return Array(node.fileID.hex.utf8)
            case "pinned": return Array(tree.pinState(of: node).rawValue.utf8)
            case "progress":
                if let transfer = residency.transfers.transfer(node.fileID) {
                    return Array("\(transfer.done)/\(transfer.total)".utf8)
                }
                if let hydration = node.hydration {
                    let (done, total) = hydration.progress
                    return Array("\(done)/\(total)".utf8)
                }
                throw .noAttribute
            case "error":
                guard let message = residency.lastError(of: node, in: tree) else { throw .noAttribute }
                return Array(message.utf8)
            case "conflict":
                // Stored and synced (a `ConflictNote`), but only the folder writes it.
                guard let note = node.xattrs[ConflictNote.attribute] else { throw .noAttribute }
                return note
            default: throw .noAttribute
            }
        }
    }
}

/// `user.syncfs.lock`: who holds locks on a file, one line (doc/CLI.md), from the mount's lock
/// service, which the daemon sets once it exists; none before (the attribute is then absent).
final class VirtualLockAttribute: Sendable {
    private let source = Mutex<(@Sendable (FileID) -> String?)?>(nil)

    func setSource(_ line: @escaping @Sendable (FileID) -> String?) { source.withLock { $0 = line } }

    /// The line for `fileID`, or nil when no lock is held on it.
    func line(for fileID: FileID) -> String? { source.withLock { $0 }?(fileID) }
}
