import SQLiteSupport
import Synchronization

/// A SQLite connection behind its own lock: `withLock` runs one caller's statements at a time.
/// A class so that two roles can share one connection (`MetadataStore` reads an in-memory
/// database through the connection that writes it).
final class LockedConnection: @unchecked Sendable {
    private let lock = Mutex(())
    /// Used only inside `lock`.
    private let connection: SQLiteConnection

    init(_ connection: SQLiteConnection) { self.connection = connection }

    func withLock<Result>(_ body: (SQLiteConnection) throws -> Result) rethrows -> Result {
        try lock.withLock { _ in try body(connection) }
    }
}
