#ifndef SYNCFS_CFUSE_SHIM_H
#define SYNCFS_CFUSE_SHIM_H
// The one C surface of SyncFS. Only Sources/SyncFS/FUSE imports this module.
//
// libfuse turns several entry points into macros or versioned symbols depending on
// FUSE_USE_VERSION and the library release (3.14 on Debian 12, 3.17 elsewhere). Swift cannot
// call macros, so each is wrapped in a `static inline` function here that compiles against both.
// No _GNU_SOURCE here: it changes glibc's own structs (fd_set), and Swift then refuses to mix
// this module's view of them with Glibc's.
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <linux/fuse.h>
#include <sys/syscall.h>
#include <sys/pidfd.h>

/// A pidfd of `pid` (glibc 2.36's pidfd_open; Swift's Glibc module does not import sys/pidfd.h).
static inline int syncfs_pidfd_open(pid_t pid) { return pidfd_open(pid, 0); }

static inline struct fuse_session *syncfs_session_new(struct fuse_args *args,
    const struct fuse_lowlevel_ops *ops, void *userdata) {
    return fuse_session_new(args, ops, sizeof(*ops), userdata);
}

static inline int syncfs_session_loop_mt(struct fuse_session *se, unsigned int max_threads) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) return -ENOMEM;
    fuse_loop_cfg_set_clone_fd(config, 0);
    fuse_loop_cfg_set_max_threads(config, max_threads);
    fuse_loop_cfg_set_idle_threads(config, max_threads);
    int result = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return result;
}

/// FUSE_ARGS_INIT is a macro.
static inline struct fuse_args syncfs_args_empty(void) {
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    return args;
}

/// fuse_session_custom_io became versioned in libfuse 3.17; this wraps either form.
static inline int syncfs_session_custom_io(struct fuse_session *se, const struct fuse_custom_io *io, int fd) {
    return fuse_session_custom_io(se, io, fd);
}

/// Adds INIT flags to an INIT reply's `struct fuse_init_out` (the second iovec of that reply).
/// Returns 1 if `body` is large enough to be one, 0 otherwise.
static inline int syncfs_init_out_add_flags(void *body, size_t length, uint32_t flags) {
    if (body == NULL || length < offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) return 0;
    ((struct fuse_init_out *)body)->flags |= flags;
    return 1;
}

/// glibc's splice(2), declared under a name of our own: glibc declares it only under
/// _GNU_SOURCE, which this header must not define. Not `syscall(SYS_splice, …)`: glibc's
/// function is a cancellation point, and libfuse ends its idle workers — blocked in this call on
/// `/dev/fuse` while a program still holds a file open in a detached mount — by cancelling them.
/// A raw syscall is no cancellation point: the loop then waited for them with no end.
extern ssize_t syncfs_glibc_splice(int in, off_t *in_offset, int out, off_t *out_offset, size_t length,
    unsigned int flags) __asm__("splice");

/// splice(2) (`syncfs_glibc_splice`).
static inline ssize_t syncfs_splice(int in, off_t *in_offset, int out, off_t *out_offset, size_t length,
    unsigned int flags) {
    return syncfs_glibc_splice(in, in_offset, out, out_offset, length, flags);
}

/// unshare(CLONE_FILES) for the calling thread: a file descriptor table of its own (a copy).
/// glibc declares unshare and CLONE_FILES only under _GNU_SOURCE.
static inline int syncfs_unshare_files(void) {
    return (int)syscall(SYS_unshare, 0x00000400 /* CLONE_FILES */);
}

/// close_range(lowest, ~0U, 0): closes every descriptor from `lowest` up in the calling thread's
/// table (kernel 5.9+); falls back to closing them one by one up to the descriptor limit.
static inline int syncfs_close_from(int lowest) {
    if (syscall(SYS_close_range, (unsigned int)lowest, ~0U, 0) == 0) return 0;
    long limit = sysconf(_SC_OPEN_MAX);
    if (limit < 0) limit = 65536;
    for (long fd = lowest; fd < limit; fd++) close((int)fd);
    return 0;
}

/// FUSE_HANDLE_KILLPRIV_V2 (kernel 5.11+): the daemon clears setuid/setgid on write, truncate
/// and chown, so the kernel may mark inodes S_NOSEC and stop asking for security.capability
/// before every write. libfuse 3.14 cannot negotiate it; the folder adds it to the INIT reply.
static const uint32_t SYNCFS_HANDLE_KILLPRIV_V2 = FUSE_HANDLE_KILLPRIV_V2;

#endif
