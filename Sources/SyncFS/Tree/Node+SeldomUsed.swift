import SyncBackend

/// The fields of a node that most nodes leave empty: a file at rest has no children, no open
/// handle, no download, no check running, no symlink target and usually no extended attribute.
/// They live in one box (`Node.seldomUsed`) that exists only while one of them is set, so a node
/// at rest carries one word for all of them instead of nine (`NodeFootprintTests`).
///
/// Same contract as the node's other `var`s: read and written only under the namespace lock.
final class SeldomUsedFields {
    var children: [FileName: InodeNumber] = [:]
    var subdirectoryCount = 0
    var openCount = 0
    var openWriters = 0
    var symlinkTarget: [UInt8]?
    var xattrs: [String: [UInt8]] = [:]
    var hydration: Hydration?
    var verification: CacheVerification?
    var retiredManifest: [ChunkRef]?

    var isEmpty: Bool {
        children.isEmpty && subdirectoryCount == 0 && openCount == 0 && openWriters == 0 && symlinkTarget == nil
            && xattrs.isEmpty && hydration == nil && verification == nil && retiredManifest == nil
    }
}

extension Node {
    /// Directories only: name → child inode.
    var children: [FileName: InodeNumber] {
        get { seldomUsed?.children ?? [:] }
        _modify { yield &seldomUsedFields().children }
    }

    /// Directories only: how many children are directories (for `st_nlink`).
    var subdirectoryCount: Int {
        get { seldomUsed?.subdirectoryCount ?? 0 }
        set {
            guard newValue != 0 || seldomUsed != nil else { return }
            seldomUsedFields().subdirectoryCount = newValue
            dropSeldomUsedIfEmpty()
        }
    }

    /// Open handles on this node (files and directories).
    var openCount: Int {
        get { seldomUsed?.openCount ?? 0 }
        set {
            guard newValue != 0 || seldomUsed != nil else { return }
            seldomUsedFields().openCount = newValue
            dropSeldomUsedIfEmpty()
        }
    }

    /// Open handles that may write (the kernel may hold dirty pages while any is open).
    var openWriters: Int {
        get { seldomUsed?.openWriters ?? 0 }
        set {
            guard newValue != 0 || seldomUsed != nil else { return }
            seldomUsedFields().openWriters = newValue
            dropSeldomUsedIfEmpty()
        }
    }

    var symlinkTarget: [UInt8]? {
        get { seldomUsed?.symlinkTarget }
        set {
            guard newValue != nil || seldomUsed != nil else { return }
            seldomUsedFields().symlinkTarget = newValue
            dropSeldomUsedIfEmpty()
        }
    }

    var xattrs: [String: [UInt8]] {
        get { seldomUsed?.xattrs ?? [:] }
        _modify { yield &seldomUsedFields().xattrs }
    }

    /// Files: the download of a placeholder in progress, shared by its readers.
    var hydration: Hydration? {
        get { seldomUsed?.hydration }
        set {
            guard newValue != nil || seldomUsed != nil else { return }
            seldomUsedFields().hydration = newValue
            dropSeldomUsedIfEmpty()
        }
    }

    /// Files: the check of a clean cached copy against its manifest while its first reads after
    /// the mount run (`contentUnverified`); nil once done or never needed.
    var verification: CacheVerification? {
        get { seldomUsed?.verification }
        set {
            guard newValue != nil || seldomUsed != nil else { return }
            seldomUsedFields().verification = newValue
            dropSeldomUsedIfEmpty()
        }
    }

    /// A placeholder replaced by a remote change while the kernel still knew it: the manifest of
    /// the content its open handles were opened on (its file ID is a throwaway by then).
    var retiredManifest: [ChunkRef]? {
        get { seldomUsed?.retiredManifest }
        set {
            guard newValue != nil || seldomUsed != nil else { return }
            seldomUsedFields().retiredManifest = newValue
            dropSeldomUsedIfEmpty()
        }
    }

    private func seldomUsedFields() -> SeldomUsedFields {
        if let fields = seldomUsed { return fields }
        let fields = SeldomUsedFields()
        seldomUsed = fields
        return fields
    }

    /// The box goes once every field is empty again (a closed file, an ended download), so a
    /// node returns to its size at rest.
    private func dropSeldomUsedIfEmpty() {
        if seldomUsed?.isEmpty == true { seldomUsed = nil }
    }
}
