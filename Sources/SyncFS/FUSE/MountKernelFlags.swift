/// Kernel mount flags a user can ask for (`--read-only`, `--allow-other`, `--no-exec`; `ro`,
/// `allow_other`, `noexec` in mount(8)'s `-o`). `default_permissions` is always on, so with
/// `allowOther` the kernel checks each user's access against the files' modes.
public struct MountKernelFlags: Sendable, Equatable {
    /// The kernel mount is read-only, and the daemon refuses modifying requests itself.
    public var readOnly = false
    /// FUSE `allow_other`: users other than the mounting one may use the folder (root's mounts
    /// always do).
    public var allowOther = false
    /// The mount is `noexec`.
    public var noExec = false

    public init(readOnly: Bool = false, allowOther: Bool = false, noExec: Bool = false) {
        self.readOnly = readOnly
        self.allowOther = allowOther
        self.noExec = noExec
    }

    /// The options for libfuse's mount (appended to the session's own), each with a leading comma.
    /// `allowOther` is applied by `FuseSession` (root gets it anyway).
    var fuseOptions: String {
        (readOnly ? ",ro" : "") + (noExec ? ",noexec" : "")
    }

    /// The same flags as `syncfs-mount mount` options (for the background daemon's command line).
    public var commandLine: [String] {
        (readOnly ? ["--read-only"] : []) + (allowOther ? ["--allow-other"] : []) + (noExec ? ["--no-exec"] : [])
    }
}
