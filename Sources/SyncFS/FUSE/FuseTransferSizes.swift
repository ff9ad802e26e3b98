import CFuse

/// The largest WRITE request the kernel sends to the daemon (`max_write`, and with it
/// `max_pages`), chosen so that libfuse can splice it.
///
/// libfuse 3.14 asks for 1 MiB writes and receives each request through a pipe (the WRITE's
/// pages move from `/dev/fuse` into the pipe and from the pipe into the cache file, never through
/// the daemon's memory; `FUSE_CAP_SPLICE_READ`, `fuseWriteBuf`) only when its pipe holds a whole
/// request: 1 MiB of data plus its 4 KiB header buffer. An unprivileged process cannot make a
/// pipe larger than `/proc/sys/fs/pipe-max-size` (1 MiB by default; root needs
/// `CAP_SYS_RESOURCE`, which containers usually drop), so libfuse fell back to `read()` of every
/// request into a buffer and the daemon copied it again with `pwrite`: two copies of every byte
/// written, for nothing. One page less per request (255 pages, 1020 KiB) makes libfuse's whole
/// request buffer exactly 1 MiB: the pipe can be that large, and every WRITE is spliced.
///
/// Where the pipe still cannot grow (an administrator's smaller `pipe-max-size`, or a user over
/// `pipe-user-pages-soft`), libfuse falls back to `read()` as before; nothing else changes.
enum FuseTransferSizes {
    /// 1 MiB less libfuse's request header buffer (`FUSE_BUFFER_HEADER_SIZE`, one page).
    static let maxWrite: UInt32 = (1 << 20) - 4096

    static func apply(to conn: UnsafeMutablePointer<fuse_conn_info>) {
        conn.pointee.max_write = min(conn.pointee.max_write, maxWrite)
    }
}
