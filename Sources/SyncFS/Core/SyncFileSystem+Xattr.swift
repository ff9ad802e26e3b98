import Glibc

/// Flags of `setxattr`.
public enum XattrSetMode: Sendable {
    case any
    /// XATTR_CREATE: fail with EEXIST if present.
    case create
    /// XATTR_REPLACE: fail with ENODATA if absent.
    case replace
}

extension SyncFileSystem {
    /// The largest value Linux allows (XATTR_SIZE_MAX).
    public static let maxXattrValue = 65536

    /// Only the `user.` namespace is stored and synced; other namespaces (security, trusted,
    /// system) are not supported on the folder.
    private static func checkName(_ name: String) throws(FSError) {
        guard name.hasPrefix("user."), name.utf8.count > 5 else { throw .notSupported }
        guard name.utf8.count <= 255 else { throw .range }
    }

    public func getxattr(_ ino: InodeNumber, name: String) throws(FSError) -> [UInt8] {
        guard name.hasPrefix("user.") else { throw .noAttribute }
        return try namespace.withLock { tree throws(FSError) in
            guard let value = try tree.node(ino).xattrs[name] else { throw .noAttribute }
            return value
        }
    }

    public func setxattr(_ ino: InodeNumber, name: String, value: [UInt8], mode: XattrSetMode) throws(FSError) {
        try Self.checkName(name)
        guard value.count <= Self.maxXattrValue else { throw .noSpace }
        try namespace.withLock { tree throws(FSError) in
            let node = try tree.node(ino)
            if node.kind == .symlink { throw .notPermitted }
            let exists = node.xattrs[name] != nil
            switch mode {
            case .create where exists: throw .exists
            case .replace where !exists: throw .noAttribute
            default: break
            }
            node.xattrs[name] = value
            node.ctime = Clock.nowNanoseconds()
            if !node.isUnlinked {
                store.xattrSet(node.ino, name: name, value: value)
                recordLocalChange(node)
            }
        }
    }

    /// Names of the node's extended attributes, in a stable order.
    public func listxattr(_ ino: InodeNumber) throws(FSError) -> [String] {
        try namespace.withLock { tree throws(FSError) in try tree.node(ino).xattrs.keys.sorted() }
    }

    public func removexattr(_ ino: InodeNumber, name: String) throws(FSError) {
        guard name.hasPrefix("user.") else { throw .notSupported }
        try namespace.withLock { tree throws(FSError) in
            let node = try tree.node(ino)
            guard node.xattrs.removeValue(forKey: name) != nil else { throw .noAttribute }
            node.ctime = Clock.nowNanoseconds()
            if !node.isUnlinked {
                store.xattrRemoved(node.ino, name: name)
                recordLocalChange(node)
            }
        }
    }
}
