/// Questions about pins and files below an entry, asked in a transaction (residency, eviction,
/// renames, the virtual `user.syncfs.pinned`).
extension TreeTransaction {
    /// Whether `node` is kept downloaded.
    func pinState(of node: Node) -> PinState {
        if node.isPinned { return .pinned }
        var current = node.parent.flatMap { nodes[$0] }
        while let ancestor = current {
            if ancestor.isPinned { return .inherited }
            current = ancestor.parent.flatMap { nodes[$0] }
        }
        return .none
    }

    /// Calls `body` for every file at or below `node`.
    func collectFiles(below node: Node, _ body: (Node) -> Void) {
        var stack = [node]
        while let current = stack.popLast() {
            if current.kind == .file { body(current) }
            for child in current.children.values { if let next = nodes[child] { stack.append(next) } }
        }
    }
}
