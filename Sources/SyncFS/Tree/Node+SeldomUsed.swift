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
        set { setSeldomUsed(isEmpty: newValue.isEmpty) { $0.children = newValue } }
        _modify {
            let fields = seldomUsedFields()
            defer { dropSeldomUsedIfEmpty() }
            yield &fields.children
        }
    }

    /// Directories only: how many children are directories (for `st_nlink`).
    var subdirectoryCount: Int {
        get { seldomUsed?.subdirectoryCount ?? 0 }
        set { setSeldomUsed(isEmpty: newValue == 0) { $0.subdirectoryCount = newValue } }
    }

    /// Open handles on this node (files and directories).
    var openCount: Int {
        get { seldomUsed?.openCount ?? 0 }
        set { setSeldomUsed(isEmpty: newValue == 0) { $0.openCount = newValue } }
    }

    /// Open handles that may write (the kernel may hold dirty pages while any is open).
    var openWriters: Int {
        get { seldomUsed?.openWriters ?? 0 }
        set { setSeldomUsed(isEmpty: newValue == 0) { $0.openWriters = newValue } }
    }

    var symlinkTarget: [UInt8]? {
        get { seldomUsed?.symlinkTarget }
        set { setSeldomUsed(isEmpty: newValue == nil) { $0.symlinkTarget = newValue } }
    }

    var xattrs: [String: [UInt8]] {
        get { seldomUsed?.xattrs ?? [:] }
        set { setSeldomUsed(isEmpty: newValue.isEmpty) { $0.xattrs = newValue } }
        _modify {
            let fields = seldomUsedFields()
            defer { dropSeldomUsedIfEmpty() }
            yield &fields.xattrs
        }
    }

    /// Files: the download of a placeholder in progress, shared by its readers.
    var hydration: Hydration? {
        get { seldomUsed?.hydration }
        set { setSeldomUsed(isEmpty: newValue == nil) { $0.hydration = newValue } }
    }

    /// Files: the check of a clean cached copy against its manifest while its first reads after
    /// the mount run (`contentUnverified`); nil once done or never needed.
    var verification: CacheVerification? {
        get { seldomUsed?.verification }
        set { setSeldomUsed(isEmpty: newValue == nil) { $0.verification = newValue } }
    }

    /// A placeholder replaced by a remote change while the kernel still knew it: the manifest of
    /// the content its open handles were opened on (its file ID is a throwaway by then).
    var retiredManifest: [ChunkRef]? {
        get { seldomUsed?.retiredManifest }
        set { setSeldomUsed(isEmpty: newValue == nil) { $0.retiredManifest = newValue } }
    }

    private func seldomUsedFields() -> SeldomUsedFields {
        if let fields = seldomUsed { return fields }
        let fields = SeldomUsedFields()
        seldomUsed = fields
        return fields
    }

    /// Sets one field (`isEmpty`: to its empty value). No box is made to hold an empty value, and
    /// the box goes once every field is empty again (a closed file, an ended download, the last
    /// attribute removed), so a node returns to its size at rest. An in-place change of `children`
    /// or `xattrs` makes a box for its length and drops it after, if empty.
    private func setSeldomUsed(isEmpty: Bool, _ set: (SeldomUsedFields) -> Void) {
        guard !isEmpty || seldomUsed != nil else { return }
        set(seldomUsedFields())
        dropSeldomUsedIfEmpty()
    }

    private func dropSeldomUsedIfEmpty() {
        if seldomUsed?.isEmpty == true { seldomUsed = nil }
    }
}
