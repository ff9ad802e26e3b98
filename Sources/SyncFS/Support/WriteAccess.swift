import SyncBackend
import Synchronization

/// What this mount may change in its container, as the container last said (`ContainerAccess`;
/// doc/SEMANTICS.md, "A viewer's mount"): the one place the FUSE adapter and the uploader ask.
/// Recorded as the `access_role` fact.
///
/// - `refusesChanges` is one atomic load: true while the role is `viewer`. The FUSE adapter then
///   answers every modifying request EROFS and the uploader sends nothing (queued changes stay
///   queued).
/// - `set` changes the role and says whether it changed; the caller records and announces it.
///   A mount starts as an editor until told otherwise.
final class WriteAccess: Sendable {
    private struct State {
        var role: AccessRole
        var scope: String?
    }

    private let refusing = Atomic<Bool>(false)
    private let state = Mutex(State(role: .editor))

    init() {}

    /// True while the container grants a viewer's rights only.
    @inline(__always)
    var refusesChanges: Bool { refusing.load(ordering: .relaxed) }

    var role: AccessRole { state.withLock { $0.role } }

    /// Where the role holds (the server's container name), once the container said it.
    var scope: String? { state.withLock { $0.scope } }

    /// Sets the role (and where it holds); true if the role changed.
    @discardableResult
    func set(_ role: AccessRole, scope: String?) -> Bool {
        state.withLock { state in
            if let scope { state.scope = scope }
            guard state.role != role else { return false }
            state.role = role
            refusing.store(!role.canWrite, ordering: .relaxed)
            return true
        }
    }
}
