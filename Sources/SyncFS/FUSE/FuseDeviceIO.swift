import CFuse
import Glibc
import Synchronization

/// The session's I/O on `/dev/fuse`, installed with `fuse_session_custom_io`: plain `read`,
/// `writev` and `splice` — with one change: the INIT reply (the first message the daemon ever
/// writes; the kernel sends no other request before it is answered) gains
/// `FUSE_HANDLE_KILLPRIV_V2`.
///
/// Why: a filesystem with extended attributes otherwise makes the kernel send GETXATTR
/// `security.capability` before every `write()` (fuse clears SB_NOSEC unless killpriv v2 was
/// negotiated), which cut 4 KiB writes several-fold. With v2 the kernel marks inodes S_NOSEC and
/// the daemon takes over clearing setuid/setgid on write, truncate and chown (see
/// `OpenFileIO.write`, `setattr`, `open`); file capabilities cannot exist on the folder
/// (only `user.` xattrs are stored).
final class FuseDeviceIO: Sendable {
    let initReplySent = Atomic<Bool>(false)

    /// The hook table. `userdata` of each hook is the session's userdata, the `FuseContext`.
    static func table() -> fuse_custom_io {
        var io = fuse_custom_io()
        io.read = deviceRead
        io.writev = deviceWritev
        io.splice_receive = deviceSplice
        io.splice_send = deviceSplice
        return io
    }
}

private func deviceRead(
    _ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ length: Int, _ userdata: UnsafeMutableRawPointer?
)
    -> Int
{
    read(fd, buffer, length)
}

private func deviceWritev(
    _ fd: Int32, _ vectors: UnsafeMutablePointer<iovec>?, _ count: Int32, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    if let userdata, let vectors, count >= 2 {
        let context = Unmanaged<FuseContext>.fromOpaque(userdata).takeUnretainedValue()
        if !context.deviceIO.initReplySent.exchange(true, ordering: .relaxed) {
            _ = syncfs_init_out_add_flags(vectors[1].iov_base, vectors[1].iov_len, SYNCFS_HANDLE_KILLPRIV_V2)
        }
    }
    return writev(fd, vectors, count)
}

private func deviceSplice(
    _ input: Int32, _ inputOffset: UnsafeMutablePointer<off_t>?, _ output: Int32,
    _ outputOffset: UnsafeMutablePointer<off_t>?, _ length: Int, _ flags: UInt32, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    syncfs_splice(input, inputOffset, output, outputOffset, length, flags)
}
