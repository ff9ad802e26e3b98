import Glibc
import SyncBackend
import Synchronization

/// The containers a server serves: `ROOT/NAME` for every valid `NAME` whose directory holds a
/// container marker. Each is opened once, on first use, and kept (one `LocalContainer` per name,
/// shared by every request).
///
/// Contract: a lookup never creates anything. A name without a marker is "no such container"
/// (nil), even if its directory exists; making containers is `syncfs-mount token create`'s job.
/// A cached container whose directory later vanishes answers `unavailable` through its own
/// reachability check.
final class ContainerRegistry: Sendable {
    let root: String
    private let opened = Mutex<[String: LocalContainer]>([:])

    init(root: String) {
        self.root = root
    }

    /// The container `name` if it is open already (cheap: no I/O).
    func cached(_ name: String) -> LocalContainer? { opened.withLock { $0[name] } }

    /// The container `name` (already checked with `ContainerName.isValid`), or nil if there is
    /// none. A directory whose container cannot be opened (damaged, newer format) is `unavailable`.
    ///
    /// Blocking (opens SQLite): call it off the cooperative pool.
    func container(named name: String) throws(ContainerProtocolError) -> LocalContainer? {
        if let cached = cached(name) { return cached }
        let path = root + "/" + name
        guard access(path + "/" + LocalContainer.markerName, F_OK) == 0 else { return nil }
        let container: LocalContainer
        do {
            // The marker exists, so this opens (and never creates) the container.
            container = try LocalContainer.openOrCreate(at: path)
        } catch {
            throw .unavailable("the container '\(name)' cannot be opened: \(error)")
        }
        // Two first requests may race to open it: the first one cached wins, the other is dropped.
        return opened.withLock { opened in
            if let existing = opened[name] { return existing }
            opened[name] = container
            return container
        }
    }
}
