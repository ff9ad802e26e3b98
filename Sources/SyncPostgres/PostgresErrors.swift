import PostgresNIO
import SyncBackend

/// Why a PostgreSQL store could not be initialised or opened. The text never holds a password.
public enum PostgresStoreError: Error, Equatable, CustomStringConvertible {
    /// PostgreSQL could not be reached or did not answer in time (retry later).
    case unavailable(String)
    /// The database has no SyncFS schema: run the explicit initialisation (`server-init`) first.
    case notInitialized(String)
    /// The schema was made by a newer SyncFS (`found` > `supported`): this code refuses to touch it.
    case schemaTooNew(found: Int, supported: Int)
    /// The schema is older than this code: run the initialisation, which migrates it.
    case schemaTooOld(found: Int, supported: Int)
    /// PostgreSQL refused a statement (permissions, a damaged schema).
    case failed(String)
    /// The server answered that the database does not exist (SQLSTATE 3D000): create it first.
    case databaseMissing(String)
    /// The server refused the login (SQLSTATE class 28: no such user, a wrong password, pg_hba).
    case loginRefused(String)

    public var description: String {
        switch self {
        case .unavailable(let reason): return "PostgreSQL is unavailable: \(reason)"
        case .notInitialized(let where_):
            return "\(where_) has no SyncFS schema; initialise it first (server-init)"
        case .schemaTooNew(let found, let supported):
            return
                "the database's SyncFS schema is version \(found), newer than this program supports (\(supported)): upgrade SyncFS"
        case .schemaTooOld(let found, let supported):
            return
                "the database's SyncFS schema is version \(found), older than \(supported): run server-init to migrate it"
        case .failed(let reason): return "PostgreSQL refused: \(reason)"
        case .databaseMissing(let where_):
            return "\(where_): the database does not exist; create it first (createdb, or CREATE DATABASE)"
        case .loginRefused(let reason): return "PostgreSQL refused the login: \(reason)"
        }
    }
}

/// How errors of postgres-nio become ours. postgres-nio's own descriptions are generic on
/// purpose; ours name the error code and, for errors the server sent, its SQLSTATE and message
/// (server messages never echo a password). Nothing here reads the connection settings.
enum PostgresFailure {
    /// Whether a retry may succeed and a printable reason.
    static func classify(_ error: any Error) -> (transient: Bool, reason: String) {
        if let error = error as? PostgresTransactionError {
            if let inner = error.beginError ?? error.closureError ?? error.commitError ?? error.rollbackError {
                return classify(inner)
            }
            return (true, "a transaction failed")
        }
        if let error = error as? ContainerProtocolError { return (error.isRetryable, error.description) }
        if let error = error as? PostgresTimeout { return (true, error.description) }
        guard let error = error as? PSQLError else {
            if error is CancellationError { return (true, "the operation was cancelled") }
            return (true, "\(type(of: error))")
        }
        guard let info = error.serverInfo else {
            var reason = "\(error.code)"
            if let underlying = error.underlying { reason += " (\(underlying))" }
            // Connection-level failures: nothing reached or came back from the server.
            return (true, reason)
        }
        let state = info[.sqlState] ?? "?????"
        let reason = "\(info[.message] ?? "an error") (SQLSTATE \(state))"
        // 08: connection exception, 40: transaction rollback (serialization, deadlock),
        // 53: insufficient resources, 57: operator intervention (shutdown), 55P03: lock timeout,
        // 28: authentication (a password being rotated), 3D000: the database is not there (yet):
        // transient for a running server (`PostgresProbe` reports both at once when opening).
        let transientClasses = ["08", "40", "53", "57", "28"]
        let transient =
            transientClasses.contains(String(state.prefix(2))) || state == "55P03" || state == "3D000"
        return (transient, reason)
    }

    /// The error a transaction's body threw (ours, passed through whole), else `error`.
    static func unwrapped(_ error: any Error) -> any Error {
        guard let error = error as? PostgresTransactionError else { return error }
        return error.closureError ?? error.beginError ?? error.commitError ?? error
    }

    /// The container error for a failure of `what`.
    static func containerError(_ error: any Error, doing what: String) -> ContainerProtocolError {
        let error = unwrapped(error)
        if let error = error as? ContainerProtocolError { return error }
        let (transient, reason) = classify(error)
        return transient
            ? .unavailable("PostgreSQL: cannot \(what): \(reason)")
            : .storageFailure("PostgreSQL: cannot \(what): \(reason)")
    }

    /// The store error for a failure of `what`.
    static func storeError(_ error: any Error, doing what: String) -> PostgresStoreError {
        let error = unwrapped(error)
        if let error = error as? PostgresStoreError { return error }
        let (transient, reason) = classify(error)
        return transient ? .unavailable("cannot \(what): \(reason)") : .failed("cannot \(what): \(reason)")
    }

    /// The SQLSTATE of a server error, if `error` is one.
    static func sqlState(_ error: any Error) -> String? {
        if let error = error as? PostgresTransactionError {
            return (error.beginError ?? error.closureError ?? error.commitError).flatMap(sqlState)
        }
        return (error as? PSQLError)?.serverInfo?[.sqlState]
    }
}

/// An operation that did not finish within the store's `operationTimeout`.
struct PostgresTimeout: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "no answer within \(seconds) s" }
}

/// Runs `body`, throwing `PostgresTimeout` if it has not finished after `timeout` (the body is
/// then cancelled). postgres-nio's pool keeps a request waiting while it cannot connect; this
/// turns a dead server into a prompt `unavailable`.
package func withTimeout<T: Sendable>(
    _ timeout: Duration, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            let parts = timeout.components
            throw PostgresTimeout(seconds: Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}
