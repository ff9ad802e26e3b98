/// Where an entry sits below the mount point: the names of the directories from the mount root
/// to its parent, and its own name (nil: the mount root itself). Every name is one path
/// component (`FileName.validated`: not `.` or `..`, no `/`), so a location can only ever name
/// something below the mount point.
struct EchoLocation: Sendable, Equatable {
    let directories: [FileName]
    let name: FileName?

    /// Nil if any name is not a single path component (the caller then does not echo).
    init?(directories: [FileName], name: FileName?) {
        for component in directories + (name.map { [$0] } ?? []) {
            guard (try? component.validated()) != nil else { return nil }
        }
        self.directories = directories
        self.name = name
    }

    /// The location of `node` below the mount point (the names from the root down), or nil if
    /// it is not attached to the root or a name is not one path component.
    init?(of node: Node, in tree: TreeTransaction) {
        guard node.ino != .root else {
            self.init(directories: [], name: nil)
            return
        }
        var names: [FileName] = []
        var current: Node? = node
        while let this = current, this.ino != .root {
            guard names.count < 4096 else { return nil }
            names.append(this.name)
            current = this.parent.flatMap { tree.nodes[$0] }
        }
        guard current?.ino == .root, let name = names.first else { return nil }
        self.init(directories: names.dropFirst().reversed(), name: name)
    }

    /// The location of the entry `name` inside the directory at this location.
    func child(_ name: FileName) -> EchoLocation? {
        guard let own = self.name else { return EchoLocation(directories: [], name: name) }
        return EchoLocation(directories: directories + [own], name: name)
    }
}
