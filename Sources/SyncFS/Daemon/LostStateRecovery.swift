import Foundation
import Glibc
import SyncBackend

/// `syncfs-mount recover` (doc/CLI.md, "recover"; doc/SEMANTICS.md, "A lost
/// state database"): the way back for a state directory whose `state.db` is missing or empty but
/// whose cache still holds content (`UsedStateGuard`), or damaged (`DamagedStateDatabase`; it is
/// set aside once the cache is emptied), which the mount refuses.
///
/// The database held every name, every queue row and every sync base; without it the cache files
/// are content named by file ID only, and the synced ones cannot be told from the edits that were
/// not uploaded. So every non-empty cache file is moved (renamed; copied, synced, then removed
/// when the destination is on another file system) into a new folder
/// `DIR/SyncFS recovered YYYY-MM-DD HHMMSS` (0700), named by its file ID, with its
/// modification time, plus `RECOVERED.txt` listing them. Empty cache files (spare files made
/// ahead of creates, or empty files) hold nothing and are removed. Where the daemon's log named a
/// file ID with a path (`RecoveryHints`), `RECOVERED.txt` gives it. The cache is then empty, so the
/// next mount starts over and attaches the container's tree; nothing the cache held is lost.
public enum LostStateRecovery {
    /// One recovered file.
    public struct Recovered: Sendable, Equatable {
        public let fileID: String
        /// Its name in the recovered folder.
        public let name: String
        public let bytes: Int64
        /// The last path the daemon's log gave this file, if any (`RecoveryHints`).
        let lastLoggedPath: String?
    }

    /// What `recover` did.
    public struct Outcome: Sendable {
        /// The folder holding the recovered files (nil if the cache held nothing to recover).
        public let folder: String?
        public let files: [Recovered]
        /// Empty cache files removed.
        public let emptyRemoved: Int
        /// Where a damaged database was moved (nil if it was missing or empty).
        public var damagedDatabase: String? = nil
    }

    /// Recovers `stateDirectory`'s cached content into a new folder in `destination` (an
    /// existing directory). Refuses a state directory in use (`busy`), one whose database is
    /// intact (`badInput`: mount it instead) or that is not a state directory (`badInput`), and a
    /// destination another user could change (`cannotCreate`, `RecoveryDestination`).
    public static func recover(stateDirectory: String, into destination: String, now: Date = Date())
        throws(MountError) -> Outcome
    {
        let state = StateDirectory(path: stateDirectory)
        var info = stat()
        guard lstat(state.path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw MountError(.badInput, "\(state.path) is not a state directory")
        }
        guard lstat(state.cachePath, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw MountError(.badInput, "\(state.path) has no cache directory: nothing to recover")
        }
        // Before anything changes: a destination another user could redirect is refused.
        let target = try RecoveryDestination.open(destination)
        defer { close(target.descriptor) }
        // The mount's own checks: this user's directory (another user's could plant a link where
        // the lock or the cache goes), made private.
        try state.create()
        // Held until done: no daemon starts on the directory meanwhile (nor runs on it now).
        let lock = try state.lock()
        defer { close(lock) }
        let damaged = StateDatabaseReader.isDamaged(databasePath: state.databasePath)
        if !damaged, let summary = StateDatabaseReader.summary(databasePath: state.databasePath),
            summary.fact(.mountCount) != nil
        {
            throw MountError(
                .badInput,
                "the database of \(state.path) is intact: nothing to recover (mount it; recover is for a state"
                    + " directory whose state.db is missing, empty or damaged)")
        }
        let outcome = try recoverCache(of: state, into: target, now: now)
        // Only once the cache is empty: the next mount then starts over, with nothing to lose.
        guard damaged else { return outcome }
        let setAside = try DamagedDatabaseSetAside.move(state, now: now)
        return Outcome(
            folder: outcome.folder, files: outcome.files, emptyRemoved: outcome.emptyRemoved,
            damagedDatabase: setAside)
    }

    /// Moves the cache's content into a new folder in `target` (the checked destination); the
    /// caller holds the lock.
    private static func recoverCache(of state: StateDirectory, into target: RecoveryDestination, now: Date)
        throws(MountError) -> Outcome
    {
        var info = stat()
        let cache: ContentCache
        do { cache = try ContentCache(directory: state.cachePath) } catch {
            throw MountError(.failed, "cannot read the cache of \(state.path): \(error)")
        }
        var found: [(id: FileID, size: Int64, mtime: timespec)] = []
        var emptyRemoved = 0
        for id in cache.allIDs().sorted(by: { $0.hex < $1.hex }) {
            guard lstat(cache.path(for: id), &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            if info.st_size == 0 {
                cache.remove(id)
                emptyRemoved += 1
            } else {
                found.append((id, Int64(info.st_size), info.st_mtim))
            }
        }
        guard !found.isEmpty else { return Outcome(folder: nil, files: [], emptyRemoved: emptyRemoved) }
        let hints = RecoveryHints.lastPaths(inLog: state.logPath)
        let folder = try RecoveredFolder.make(in: target, now: now)
        defer { close(folder.descriptor) }
        var recovered: [Recovered] = []
        for file in found {
            let name = file.id.hex
            do throws(MountError) {
                try folder.take(cache.path(for: file.id), as: name, mtime: file.mtime)
            } catch {
                // What was moved so far is listed; the rest stays in the cache (the mount still refuses).
                try? folder.writeIndex(recovered, statePath: state.path, now: now)
                throw error
            }
            recovered.append(
                Recovered(fileID: file.id.hex, name: name, bytes: file.size, lastLoggedPath: hints[file.id.hex]))
        }
        try folder.writeIndex(recovered, statePath: state.path, now: now)
        return Outcome(folder: folder.path, files: recovered, emptyRemoved: emptyRemoved)
    }
}
