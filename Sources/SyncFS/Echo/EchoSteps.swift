import SyncBackend

/// A remote change the kernel must see as a VFS call on the mount (locations below its root).
enum EchoStep: Sendable, Equatable {
    case create(EchoLocation, kind: NodeKind, target: [UInt8]?)
    case remove(EchoLocation, isDirectory: Bool)
    case move(from: EchoLocation, to: EchoLocation)
}

/// A remote change of content or attributes, echoed after it was applied.
enum EchoTouch: Sendable, Equatable {
    case content(EchoLocation, size: Int64)
    case attributes(EchoLocation, kind: NodeKind, mode: UInt32, uid: UInt32)

    /// What to touch after `node`'s remote update (nil: it cannot be named below the mount): a
    /// file's content when it changed, its attributes otherwise.
    init?(after node: Node, contentChanged: Bool, in tree: TreeTransaction) {
        guard let location = EchoLocation(of: node, in: tree) else { return nil }
        if contentChanged && node.kind == .file {
            self = .content(location, size: node.size.load(ordering: .relaxed))
        } else {
            self = .attributes(location, kind: node.kind, mode: node.mode, uid: node.uid)
        }
    }
}
