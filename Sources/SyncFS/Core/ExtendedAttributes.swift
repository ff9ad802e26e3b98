import Foundation
import Glibc

/// Flags of `setxattr`.
enum XattrSetMode: Sendable {
    case any
    /// XATTR_CREATE: fail with EEXIST if present.
    case create
    /// XATTR_REPLACE: fail with ENODATA if absent.
    case replace
}

/// The extended attributes of the folder's entries (`getxattr`, `setxattr`, `listxattr`,
/// `removexattr`): the `user.` namespace, stored and synced with each entry, and the folder's own
/// virtual `user.syncfs.*` attributes, computed from the content's residency (doc/SEMANTICS.md).
///
/// Uses the tree (the stored attributes live on each node) and the residency (the virtual
/// attributes' states; `user.syncfs.pinned` pins). The FUSE adapter calls it.
final class ExtendedAttributes: Sendable {
    let live: LiveTree
    let residency: ContentResidency
    /// Where `user.syncfs.lock` comes from (`VirtualLockAttribute`).
    let lockAttribute = VirtualLockAttribute()

    init(live: LiveTree, residency: ContentResidency) {
        self.live = live
        self.residency = residency
    }

    /// The largest value Linux allows (XATTR_SIZE_MAX).
    static let maxXattrValue = 65536

    /// Only the `user.` namespace is stored and synced; other namespaces (security, trusted,
    /// system) are not supported on the folder.
    private static func checkName(_ name: String) throws(FSError) {
        guard name.hasPrefix("user."), name.utf8.count > 5 else { throw .notSupported }
        guard name.utf8.count <= 255 else { throw .range }
    }

    /// Names under this prefix are the folder's own, virtual attributes (see `virtualXattr`).
    static let virtualPrefix = "user.syncfs."

    /// The value of `name`; `user.syncfs.*` names are computed (`virtualXattr`).
    func get(_ ino: InodeNumber, name: String) throws(FSError) -> [UInt8] {
        guard name.hasPrefix("user.") else { throw .noAttribute }
        if name.hasPrefix(Self.virtualPrefix) { return try virtualXattr(ino, name: name) }
        return try live.transact { tree throws(FSError) in
            guard let value = try tree.node(ino).xattrs[name] else { throw .noAttribute }
            return value
        }
    }

    /// Stores `value` under `name` (recorded and synced); of the virtual attributes only
    /// `user.syncfs.pinned` may be set, which pins or unpins.
    func set(_ ino: InodeNumber, name: String, value: [UInt8], mode: XattrSetMode) throws(FSError) {
        try Self.checkName(name)
        if name.hasPrefix(Self.virtualPrefix) {
            guard name == Self.virtualPrefix + "pinned" else { throw .notPermitted }
            let text = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            switch text.lowercased() {
            case "1", "true", "yes": try residency.setPinned(ino, true)
            case "0", "false", "no": try residency.setPinned(ino, false)
            default: throw .invalidArgument
            }
            return
        }
        guard value.count <= Self.maxXattrValue else { throw .noSpace }
        try live.transact { tree throws(FSError) in
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
                tree.record(.setXattr(node.ino, name: name, value: value))
                tree.recordLocalChange(node)
                tree.noteChange(.modified, node, origin: .local)
            }
        }
    }

    /// Names of the node's extended attributes, in a stable order.
    func list(_ ino: InodeNumber) throws(FSError) -> [String] {
        // The virtual `user.syncfs.*` attributes are not listed, so copying tools never copy them.
        // Nor is the stored conflict mark (`user.syncfs.conflict`), read through `getxattr`.
        try live.transact { tree throws(FSError) in
            try tree.node(ino).xattrs.keys.filter { !$0.hasPrefix(Self.virtualPrefix) }.sorted()
        }
    }

    /// Removes `name` (recorded and synced); removing `user.syncfs.pinned` unpins.
    func remove(_ ino: InodeNumber, name: String) throws(FSError) {
        guard name.hasPrefix("user.") else { throw .notSupported }
        if name.hasPrefix(Self.virtualPrefix) {
            guard name == Self.virtualPrefix + "pinned" else { throw .notPermitted }
            return try residency.setPinned(ino, false)
        }
        try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            guard node.xattrs.removeValue(forKey: name) != nil else { throw .noAttribute }
            node.ctime = Clock.nowNanoseconds()
            if !node.isUnlinked {
                tree.record(.removeXattr(node.ino, name: name))
                tree.recordLocalChange(node)
                tree.noteChange(.modified, node, origin: .local)
            }
        }
    }
}
