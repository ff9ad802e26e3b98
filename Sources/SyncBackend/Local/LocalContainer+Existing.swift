import Glibc

extension LocalContainer {
    /// Whether `path` holds a container marker (a SyncFS container of any format). Reads nothing
    /// else and creates nothing.
    public static func isContainer(at path: String) -> Bool {
        access(LocalLayout(root: path).markerPath, F_OK) == 0
    }

    /// The ID in the marker of the container at `path`, or nil (no container, unreadable marker).
    /// Reads the marker only; opens nothing.
    public static func markerID(at path: String) -> String? {
        try? readMarker(LocalLayout(root: path)).id
    }

    /// Opens the container at `path`; never creates anything (not even a missing parent).
    /// A path without a marker throws `notAContainer`, saying what the path is instead.
    public static func openExisting(at path: String) throws(ContainerOpenError) -> LocalContainer {
        guard isContainer(at: path) else { throw .notAContainer(whatIsThere(path)) }
        return try open(LocalLayout(root: path))
    }

    /// What `path` is, for a refusal: missing, a file, an empty directory or another directory.
    public static func whatIsThere(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return "\(path) does not exist" }
            return "\(path) is not a SyncFS container (\(LocalFileIO.errorText(errno)))"
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(path) is a file, not a SyncFS container" }
        guard let directory = opendir(path) else {
            return "\(path) is not a SyncFS container (\(LocalFileIO.errorText(errno)))"
        }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = entry.localEntryName
            if name != "." && name != ".." {
                return "\(path) is a directory but not a SyncFS container (no \(markerName))"
            }
        }
        return "\(path) is an empty directory, not a SyncFS container"
    }
}
