import Glibc
import SyncBackend

extension SyncFileSystem {
    /// `mknod`: regular files are made; devices, FIFOs and sockets cannot be synced → EPERM.
    func mknod(parent: InodeNumber, name: FileName, mode: UInt32, caller: Caller) throws(FSError)
        -> EntryReply
    {
        if let echoed = echo.request(from: caller) {
            return try echoed.create(parent: parent, name: name, kind: .file)
        }
        guard mode & UInt32(S_IFMT) == UInt32(S_IFREG) || mode & UInt32(S_IFMT) == 0 else { throw .notPermitted }
        let name = try name.validated()
        return try live.transact { tree throws(FSError) in
            let directory = try tree.directory(parent)
            let node = try tree.makeNode(.file, in: directory, name: name, mode: mode, caller: caller)
            try cache.create(node.fileID)
            return tree.entryReply(for: node)
        }
    }

    /// Opens a file (`FileOpener.open`: flags, placeholders, `O_TRUNC`).
    ///
    /// The echo thread's open (a content touch, `InotifyEcho`) downloads nothing and counts as
    /// neither open nor writing (`EchoCall.open`).
    func open(_ ino: InodeNumber, flags: Int32, caller: Caller) throws(FSError) -> OpenFile {
        if let echoed = echo.request(from: caller) { return try echoed.open(ino) }
        return try opener.open(ino, flags: flags, caller: caller)
    }
}
