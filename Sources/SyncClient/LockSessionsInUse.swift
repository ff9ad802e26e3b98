import SyncBackend
import Synchronization

/// The lock sessions this process has sent to a server, by public ID. A server answers every
/// lock with its holder's public ID (`LockSession.publicID`), never its session; the client
/// puts back the sessions it knows, so its caller sees its own locks under its own session and
/// every other holder's under a public ID (which renews, unlocks and releases nothing).
///
/// Process-wide, so a container that fails over to another server, or is opened again, still
/// recognises the sessions its mount used. Bounded: the oldest of more than `capacity` sessions
/// is forgotten (a mount uses one per run).
enum LockSessionsInUse {
    static let capacity = 256

    private struct Book {
        var byPublicID: [LockSession: LockSession] = [:]
        var order: [LockSession] = []
    }

    private static let book = Mutex(Book())

    /// Remembers `session` as one this process uses.
    static func note(_ session: LockSession) {
        let publicID = session.publicID
        book.withLock { book in
            guard book.byPublicID.updateValue(session, forKey: publicID) == nil else { return }
            book.order.append(publicID)
            if book.order.count > capacity { book.byPublicID[book.order.removeFirst()] = nil }
        }
    }

    /// `lock` with its public ID replaced by the session, when it is one this process uses.
    static func restored(_ lock: HeldLock) -> HeldLock {
        guard let session = book.withLock({ $0.byPublicID[lock.session] }) else { return lock }
        var restored = lock
        restored.session = session
        return restored
    }
}
