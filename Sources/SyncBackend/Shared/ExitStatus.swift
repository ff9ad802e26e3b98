/// How a `syncfs-mount` process ends — every command, the mount daemon and the server: the one
/// list of its exit statuses (sysexits.h values where one fits).
///
/// Scripts, mount(8) and systemd units (`RestartPreventExitStatus=64 65 77`) act on these
/// numbers, so a value never changes meaning. doc/CLI.md, "Exit codes", lists exactly these
/// (`ExitStatusDocumentTests` keeps the table true). It lives here, the lowest module both the
/// command line's errors (`MountError` in SyncFS) and the server's (`SyncServerError`) depend on.
public enum ExitStatus: Int32, CaseIterable, Sendable {
    /// Done as asked.
    case success = 0
    /// Anything else, with a message saying what: an unexpected internal error, or a command that
    /// refused part of what it was asked (a pinned file not evicted, a path without a conflict).
    case failure = 1
    /// EX_USAGE: the command line is wrong (unknown option, missing argument, a malformed
    /// `--listen`, `--lifeline` with standard input already at end-of-file); nothing was done.
    case usage = 64
    /// EX_DATAERR: bad input — a mount point missing or not empty, a path that is not a SyncFS
    /// container or not in a mount, a bad TLS file, an unknown token ID.
    case badInput = 65
    /// EX_UNAVAILABLE: no `/dev/fuse` (or `fusermount3` for an unprivileged user), or the path is
    /// in a mount whose daemon is gone.
    case unavailable = 69
    /// EX_CANTCREAT: the state directory, a database or the container cannot be created.
    case cannotCreate = 73
    /// EX_TEMPFAIL: temporarily impossible, trying again later may work (a busy mount point, a
    /// state directory in use, an unreachable container, an address in use, an ended stream).
    case temporaryFailure = 75
    /// EX_NOPERM: permission denied (an unsafe runtime directory, an address this user may not
    /// bind, a mount point of another user).
    case permissionDenied = 77
}
