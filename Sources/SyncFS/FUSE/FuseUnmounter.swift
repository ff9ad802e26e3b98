import Glibc

/// Removes kernel mounts: directly as root, through `fusermount3` otherwise.
public enum Unmounter {
    /// Lazy unmount: the mount disappears at once; open files keep working until closed.
    static func detach(_ mountpoint: String) {
        if geteuid() == 0 && umount2(mountpoint, Int32(MNT_DETACH)) == 0 { return }
        _ = runFusermount(["-u", "-z", mountpoint])
    }

    /// Normal unmount: fails with EBUSY while files are open. Returns 0 or an errno.
    public static func unmount(_ mountpoint: String) -> Int32 {
        if geteuid() == 0 {
            return umount2(mountpoint, 0) == 0 ? 0 : errno
        }
        return runFusermount(["-u", mountpoint]) == 0 ? 0 : EBUSY
    }

    /// True if `path` is a mount point whose FUSE daemon is gone ("Transport endpoint is not
    /// connected"), as a killed daemon leaves behind.
    public static func isStaleMount(_ path: String) -> Bool {
        // `stat` may still be answered from the kernel's cached attributes of the dead root;
        // `statvfs` always asks the (gone) daemon.
        var info = statvfs()
        return statvfs(path, &info) != 0 && errno == ENOTCONN
    }

    /// True if `path` is listed as a mount point in /proc/self/mounts.
    static func isMounted(_ path: String) -> Bool {
        guard let file = fopen("/proc/self/mounts", "r") else { return false }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let fields = String(cString: line).split(separator: " ")
            if fields.count > 1, unescapeMountPath(String(fields[1])) == path { return true }
        }
        return false
    }

    /// /proc/mounts escapes space, tab, newline and backslash as octal.
    private static func unescapeMountPath(_ text: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == 92, utf8.count >= 3, let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func runFusermount(_ arguments: [String]) -> Int32 {
        var pid = pid_t()
        let argv = (["fusermount3"] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        guard posix_spawnp(&pid, "fusermount3", nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }
}
