import Foundation
import Glibc
import SyncBackend
import SyncClient
import SyncFS

/// A new local container is made only on request (doc/CLI.md, "`syncfs-mount init PATH`"):
/// `syncfs-mount init PATH`, or `mount --create`. Everything else refuses a path that is not a
/// container (exit 65) and creates nothing, so a mistyped path never mounts a new empty folder.
public enum ContainerCreation {
    /// `syncfs-mount init PATH`: makes a new, empty local container at `path` (mode 0700) and
    /// returns its ID. `path` must be missing or an empty directory, and its parent must exist
    /// (no parents are made: a mistyped parent is an error, not a new directory tree).
    public static func initialize(_ path: String) throws(MountError) -> String {
        if LocalContainer.isContainer(at: path) {
            throw MountError(.badInput, "\(path) is already a SyncFS container; mount it with `syncfs-mount mount`")
        }
        try checkParent(of: path)
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR,
            let names = try? FileManager.default.contentsOfDirectory(atPath: path), !names.isEmpty
        {
            throw MountError(.badInput, "\(path) is not empty; a new container needs a new or empty directory")
        }
        return try create(path).containerID
    }

    /// A new local container never goes inside a SyncFS folder: its database and chunks would be
    /// written through that mount and synced to every machine (and a failure half-way would leave
    /// a folder that syncs). Checked before anything is made.
    static func checkOutsideSyncFSFolders(_ path: String) throws(MountError) {
        guard let folder = SyncFSMounts.current().enclosing(path) else { return }
        throw MountError(
            .badInput,
            "\(path) is inside the SyncFS folder \(folder.mountpoint): a container there would be written "
                + "through that mount and synced with it; make it outside every SyncFS folder. Nothing was created")
    }

    /// `mount --create` on a state directory's first mount: opens the container at `path`, or
    /// makes it there if the path is missing or an empty directory (its parent must exist).
    static func openOrCreate(_ path: String) throws(MountError) -> LocalContainer {
        if LocalContainer.isContainer(at: path) { return try open(path) }
        try checkParent(of: path)
        return try create(path)
    }

    /// A state directory's first mount without `--create`: the container must exist.
    static func open(_ path: String) throws(MountError) -> LocalContainer {
        do {
            return try LocalContainer.openExisting(at: path)
        } catch {
            switch error {
            case .notAContainer: throw notAContainer(path)
            case .unsupportedFormat(let reason): throw MountError(.badInput, reason)
            case .cannotCreate(let reason): throw MountError(.cannotCreate, reason)
            }
        }
    }

    /// The command line's check before it creates anything (the state directory included):
    /// unless `create`, a local `path` that is not a container is refused, except when the state
    /// directory already records its container (a later mount, which may start offline while a
    /// removable disk is away: the daemon decides, and never creates).
    public static func checkBeforeMount(_ path: String, create: Bool, stateDirectory: String) throws(MountError) {
        guard !create, !ServerAddress.looksLikeURL(path), !LocalContainer.isContainer(at: path) else { return }
        let databasePath = StateDirectory(path: stateDirectory).databasePath
        if StateDatabaseReader.summary(databasePath: databasePath)?.fact(.containerID) != nil {
            return
        }
        throw notAContainer(path)
    }

    /// The refusal of a path that is not a container, naming both remedies where they apply.
    public static func notAContainer(_ path: String) -> MountError {
        let what = LocalContainer.whatIsThere(path)
        var info = stat()
        let isNonEmptyDirectory =
            stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
            && !((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).isEmpty
        if isNonEmptyDirectory || (stat(path, &info) == 0 && info.st_mode & S_IFMT != S_IFDIR) {
            return MountError(.badInput, "\(what); a new container needs a new or empty directory")
        }
        return MountError(
            .badInput,
            "\(what); nothing was created. To make a new empty container there, run "
                + "`syncfs-mount init \(path)` first, or mount with --create")
    }

    /// The parent of `path` must be an existing directory.
    private static func checkParent(of path: String) throws(MountError) {
        let parent = (path as NSString).deletingLastPathComponent
        var info = stat()
        guard stat(parent.isEmpty ? "/" : parent, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw MountError(
                .badInput,
                "the parent directory \(parent) of \(path) does not exist; check the path, or create it first "
                    + "(mkdir -p \(parent))")
        }
    }

    private static func create(_ path: String) throws(MountError) -> LocalContainer {
        do {
            return try LocalContainer.openOrCreate(at: path)
        } catch {
            switch error {
            case .notAContainer(let reason), .unsupportedFormat(let reason): throw MountError(.badInput, reason)
            case .cannotCreate(let reason): throw MountError(.cannotCreate, reason)
            }
        }
    }
}
