import Foundation
import Glibc
import SyncBackend
import Synchronization

/// The containers a server serves: `ROOT/NAME` for every valid `NAME` whose directory holds a
/// container marker. Each is opened on first use and kept (one `LocalContainer` per name, shared
/// by every request) for as long as it is still the container on disk.
///
/// Contract:
/// - A lookup never creates anything. A name without a marker is "no such container" (nil), even
///   if its directory exists; making containers is `syncfs-mount token create`'s job.
/// - Every lookup stats `ROOT/NAME` and its marker (two `stat` calls) and compares their
///   (`st_dev`, `st_ino`) with those seen when the cached container was opened. If either changed
///   (the directory was moved aside and a backup restored, or removed and made again by `token
///   create`), the cached container is dropped and the one now on disk is opened, so no request
///   reaches the database of a container that is no longer `ROOT/NAME`. A missing marker drops
///   it too (nil: `404`).
/// - The identities are taken before the container is opened: a replacement racing the opening
///   is seen by the next lookup, never hidden from it.
final class ContainerRegistry: Sendable {
    let root: String
    private let opened = Mutex<[String: Opened]>([:])

    /// Where a file is: it changes when the file is replaced, not when it is written to.
    struct FileIdentity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// The container directory's and its marker's identities.
    struct Identity: Equatable, Sendable {
        var directory: FileIdentity
        var marker: FileIdentity
    }

    private struct Opened: Sendable {
        let container: LocalContainer
        let identity: Identity
    }

    init(root: String) {
        self.root = root
    }

    /// The container `name` (already checked with `ContainerName.isValid`), or nil if there is
    /// none. A directory whose container cannot be opened (damaged, newer format), or that cannot
    /// be stat'ed for another reason than its absence, is `unavailable`.
    ///
    /// Blocking (`stat`, and SQLite when it opens): call it off the cooperative pool.
    func container(named name: String) throws(ContainerProtocolError) -> LocalContainer? {
        let path = root + "/" + name
        guard let identity = try identity(of: name) else {
            opened.withLock { _ = $0.removeValue(forKey: name) }
            return nil
        }
        if let cached = opened.withLock({ $0[name] }), cached.identity == identity { return cached.container }
        let container: LocalContainer
        do {
            // Never creates: a marker removed since `identity` looked is "cannot be opened".
            container = try LocalContainer.openExisting(at: path)
        } catch {
            throw .unavailable("the container '\(name)' cannot be opened: \(error)")
        }
        // Two requests may race to open it: the first one cached for this identity wins.
        return opened.withLock { opened in
            if let existing = opened[name], existing.identity == identity { return existing.container }
            opened[name] = Opened(container: container, identity: identity)
            return container
        }
    }

    /// The valid names under the root whose directory holds a container marker, sorted; opens
    /// nothing. Blocking (`readdir`, `stat`): call it off the cooperative pool.
    func containerNames() throws(ContainerProtocolError) -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: root)
        } catch {
            throw .unavailable("cannot list the containers under the server's root: \(error.localizedDescription)")
        }
        var found: [String] = []
        for name in names.sorted() where ContainerName.isValid(name) {
            if try identity(of: name) != nil { found.append(name) }
        }
        return found
    }

    /// The identities of `ROOT/NAME` and of its marker; nil when either is missing.
    func identity(of name: String) throws(ContainerProtocolError) -> Identity? {
        let path = root + "/" + name
        guard let directory = try Self.fileIdentity(path, name: name),
            let marker = try Self.fileIdentity(path + "/" + LocalContainer.markerName, name: name)
        else { return nil }
        return Identity(directory: directory, marker: marker)
    }

    /// `path`'s identity; nil if it does not exist. (`name` is for the message: the server's
    /// paths are not the client's business.)
    private static func fileIdentity(_ path: String, name: String) throws(ContainerProtocolError) -> FileIdentity? {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return nil }
            throw .unavailable("cannot look at the container '\(name)': \(String(cString: strerror(code)))")
        }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}
