import Glibc

/// How long the kernel may keep what the daemon told it about names and attributes.
///
/// Every change to the tree reaches the kernel through this daemon: local changes are FUSE
/// requests the kernel made itself (it updates its own dentries and attributes), remote ones are
/// applied by the follower, which sends `fuse_lowlevel_notify_inval_entry` / `_delete` /
/// `_inval_inode` for every name it adds, removes or moves and every inode whose attributes or
/// content it changes (`KernelInvalidation`, sent by `LiveTree.perform` after the lock is
/// dropped; an entry invalidation also drops the parent directory's attributes in the kernel).
/// Nothing else changes the tree while it is mounted, so a cached answer can only be stale if an
/// invalidation is missing — a bug the mount tests in `KernelCacheTest` look for — and the
/// timeout only bounds how long such a bug would show. Races between a reply and an
/// invalidation are the kernel's: an entry invalidation takes the directory's lock (in-flight
/// lookups finish first), an inode invalidation bumps the attribute version (older replies are
/// dropped).
enum KernelCachePolicy {
    /// Entry (positive and negative) and attribute timeout, in seconds: one day, as libfuse's
    /// `passthrough_hp`. Long enough that a tree walk of any size is answered from the kernel's
    /// caches the second time (with 10 s, a walk of 100,000 files outlasted its own cache).
    static let timeout: Double = 86_400

    /// Whether the kernel keeps directory listings across opens (`cache_readdir` and
    /// `keep_cache` in `opendir`), so a repeated walk reads no directory from the daemon. The
    /// kernel drops a directory's listing itself on every local change in it; for remote ones
    /// every entry invalidation (`KernelNotifier.entryChanged`/`entryDeleted`) also drops the
    /// parent directory's cached pages, which hold the listing — whether or not the kernel had
    /// the name cached, and whether or not the change moved the directory's mtime.
    static let cachesListings = true

    /// Whether every directory read is a READDIRPLUS (names with their attributes), rather than
    /// libfuse's default FUSE_READDIRPLUS_AUTO, under which the kernel sends READDIRPLUS only for
    /// a directory's first page (or after lookups in it) and plain READDIR otherwise. A cold
    /// `du` or `ls -l` reads a whole directory and then stats every name: under AUTO each name
    /// past the first page became a LOOKUP of its own (16,000 of them for 20,000 files).
    /// Safe as every entry reply: each READDIRPLUS entry is a lookup (counted in `InodeTable`,
    /// forgotten by the kernel), cached for `timeout` and invalidated like a LOOKUP's. Whether a
    /// page carries attributes at all is the reader's (`ReaddirPlusReaders`): names and types only
    /// for a walk that does not stat.
    static let readdirPlusAlways = true

    /// Whether the mount declares POSIX ACL support to the kernel (FUSE_POSIX_ACL). It does not:
    /// the folder stores no ACLs (setting one fails with EOPNOTSUPP), and declared support made
    /// the kernel ask the daemon for `system.posix_acl_access` of every inode it had not cached
    /// yet — `ls -l` asks it of every file, so a cold `ls -lR` of 20,000 files was 20,000
    /// GETXATTR round trips. Undeclared, the kernel checks permissions from the mode bits alone
    /// (`default_permissions`, as with declared support and no ACLs), applies the umask itself,
    /// and passes ACL queries to the daemon, which answers them "not supported"
    /// (`isUnsupportedXattr`); `ls` then stops asking for the whole device, and `getfacl`/libacl
    /// show the ACL equivalent to the mode, as on any file system without ACLs.
    static let declaresPosixACL = false

    /// Extended attribute names answered EOPNOTSUPP at once: the folder stores only `user.`
    /// names, so security labels (`security.selinux`, `security.SMACK64`, …) and POSIX ACLs
    /// (`system.posix_acl_access`, `system.posix_acl_default`) are "not supported", which is
    /// also what setting one answers. Programs that ask per file (`ls -l` asks `security.selinux`
    /// and `system.posix_acl_access` of every name) remember "unsupported" for the whole device
    /// and stop asking; "no such attribute" (ENODATA) would make them ask again for every file.
    /// `security.capability` keeps ENODATA: the kernel reads it on exec and before writes, and
    /// treats both answers alike. The ACL names keep ENODATA if the mount declares ACL support
    /// (`declaresPosixACL`): the kernel would turn EOPNOTSUPP into an error of its ACL check.
    static func isUnsupportedXattr(_ name: UnsafePointer<CChar>) -> Bool {
        if strncmp(name, "security.", 9) == 0 { return strcmp(name, "security.capability") != 0 }
        return !declaresPosixACL
            && (strcmp(name, "system.posix_acl_access") == 0 || strcmp(name, "system.posix_acl_default") == 0)
    }
}
