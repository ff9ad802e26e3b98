import Synchronization

/// A count of logins whose password work runs now, at most `limit` at once: each Argon2id hash or
/// verify holds 19 MiB (`PasswordHash`).
final class LoginSlots: Sendable {
    static let limit = 4
    private let count = Atomic<Int>(0)

    func enter() -> Bool {
        if count.add(1, ordering: .acquiringAndReleasing).newValue <= Self.limit { return true }
        count.subtract(1, ordering: .acquiringAndReleasing)
        return false
    }

    func leave() { count.subtract(1, ordering: .acquiringAndReleasing) }
}

/// Whether a key's event is due again: at most once a minute per key, in this process.
final class OncePerMinute: Sendable {
    private let last = Mutex<[String: Int64]>([:])

    func due(_ key: String, at time: Int64) -> Bool {
        last.withLock { last in
            if let seen = last[key], time - seen < 60 { return false }
            if last.count > 10_000 { last.removeAll() }
            last[key] = time
            return true
        }
    }
}
