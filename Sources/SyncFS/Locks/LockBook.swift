import Foundation
import SyncBackend
import Synchronization

/// The mount's lock state shared between the lock thread (`MountLocks`, the only writer) and the
/// threads that read it: a FUSE flush asking whether any POSIX lock is held, `status`, the
/// `user.syncfs.lock` attribute.
final class LockBook: Sendable {
    private struct Extra {
        /// Since when lock calls find the container unreachable; nil while it answers.
        var offlineSince: Date?
        /// The last locks lost, newest last (at most `lostKept`).
        var lost: [LostLock] = []
        /// How many were lost since the mount.
        var lostCount = 0
    }

    private let state: Mutex<LocalLocks>
    private let extra = Mutex(Extra())
    /// `LocalLocks.holdsPosixLocks`, readable without the lock (every close looks).
    private let posixHeld = Atomic<Bool>(false)
    static let lostKept = 100

    init(session: LockSession, holderName: String) {
        state = Mutex(LocalLocks(session: session, holderName: holderName))
    }

    var session: LockSession { state.withLock { $0.session } }

    /// A copy of the state (the lock thread's view between its own changes).
    var snapshot: LocalLocks { state.withLock { $0 } }

    /// Changes the state (lock thread only).
    func change<T: Sendable>(_ body: (inout LocalLocks) -> T) -> T {
        state.withLock { locks in
            let result = body(&locks)
            posixHeld.store(locks.holdsPosixLocks, ordering: .relaxed)
            return result
        }
    }

    var holdsPosixLocks: Bool { posixHeld.load(ordering: .relaxed) }

    /// Whether `key` holds a lock here (or may still hold one at the container).
    func holds(_ key: LockKey) -> Bool {
        state.withLock { !$0.locks(of: key).isEmpty || $0.isLocalOnly(key) }
    }

    var offlineSince: Date? { extra.withLock { $0.offlineSince } }

    func unreachable() {
        extra.withLock { if $0.offlineSince == nil { $0.offlineSince = Date() } }
    }

    func reachable() {
        extra.withLock { $0.offlineSince = nil }
    }

    func recordLost(_ lost: LostLock) {
        extra.withLock {
            $0.lostCount += 1
            $0.lost.append(lost)
            if $0.lost.count > Self.lostKept { $0.lost.removeFirst($0.lost.count - Self.lostKept) }
        }
    }

    var lostSinceStart: Int { extra.withLock { $0.lostCount } }

    func lost(on fileID: FileID) -> [LostLock] { extra.withLock { $0.lost.filter { $0.fileID == fileID } } }
}

/// One owner's locks on one file that this mount had granted and then lost: their lease ran out
/// while the container could not be reached (another mount may have held them since), the
/// container no longer held them, or locks granted while offline were held elsewhere when
/// claimed. `locks` are the ranges that were held.
struct LostLock: Sendable, Equatable {
    var fileID: FileID
    var kind: LockKind
    var owner: UInt64
    var pid: Int32
    var locks: [HeldLock]
    var reason: String
    var at: Date
}
