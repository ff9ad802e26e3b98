import Glibc
import SyncBackend

extension SyncFileSystem {
    func mkdir(parent: InodeNumber, name: FileName, mode: UInt32, caller: Caller) throws(FSError)
        -> EntryReply
    {
        if let echoed = echo.request(from: caller) {
            return try echoed.create(parent: parent, name: name, kind: .directory)
        }
        let name = try name.validated()
        return try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            let node = try tree.makeNode(.directory, in: directory, name: name, mode: mode, caller: caller)
            return tree.entryReply(for: node)
        }
    }

    func rmdir(parent: InodeNumber, name: FileName, caller: Caller = .thisProcess) throws(FSError) {
        if let echoed = echo.request(from: caller) { return try echoed.remove(parent: parent, name: name) }
        try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            try tree.refuseIfUnannounced(parent, name)
            guard let node = tree.child(of: directory, named: name) else { throw .notFound }
            guard node.kind == .directory else { throw .notDirectory }
            guard node.children.isEmpty, !tree.holdsExcludedFolder(node) else { throw .notEmpty }
            try tree.unlinkNode(node, from: directory)
        }
    }

    /// Makes every metadata change so far durable (the tree is one database).
    func fsyncdir() throws(FSError) {
        do { try store.commit(durable: true) } catch { throw .io(EIO) }
    }
}
