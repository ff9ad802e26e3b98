import CSQLite
import Glibc

/// `O_PATH` (Linux), which Glibc's Swift overlay does not export: a descriptor that names a file
/// without opening it for reading or writing.
private let openPathOnly: Int32 = 0o10000000

/// A failure of a SQLite database, with SQLite's own words.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "database error \(code): \(message)" }

    /// SQLite's primary result code (the low byte of an extended one).
    package var primaryCode: Int32 { code & 0xff }
    /// Another connection held the lock past the busy timeout (`SQLITE_BUSY`, `SQLITE_LOCKED`).
    package var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }
    /// The database file could not be opened (`SQLITE_CANTOPEN`): missing, or its directory is gone.
    package var isCannotOpen: Bool { primaryCode == SQLITE_CANTOPEN }
    /// The disk failed under SQLite (`SQLITE_IOERR`).
    package var isIOError: Bool { primaryCode == SQLITE_IOERR }
    /// The disk is full (`SQLITE_FULL`: "database or disk is full").
    package var isDiskFull: Bool { primaryCode == SQLITE_FULL }
    /// The file is damaged: "database disk image is malformed" (`SQLITE_CORRUPT`) or "file is not
    /// a database" (`SQLITE_NOTADB`, a garbled header). Retrying or freeing space cannot help.
    package var isDamage: Bool { primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB }
}

/// One SQLite connection: prepared statements cached by SQL text, explicit transactions.
///
/// Not thread-safe: its owner (the client's `MetadataStore`, a container's store) serialises every
/// use behind one lock. Shared by the targets of this package (`package` access), not public API.
package final class SQLiteConnection {
    private let db: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens the database at `path`, creating it if needed unless `create` is false (then a
    /// missing file is an error); `":memory:"` gives a private in-memory one.
    ///
    /// Private by default (doc/FORMATS.md, "Permissions"): a new database file is created 0600
    /// whatever the umask, so SQLite makes its `-wal`, `-shm` and `-journal` files 0600 too (it
    /// gives them the database file's mode); an existing database and its `-wal`/`-shm` that this
    /// user owns and others can read are tightened to 0600.
    package init(path: String, create: Bool = true) throws(SQLiteError) {
        if path != ":memory:" && !path.hasPrefix("file:") {
            try Self.preparePrivateFile(path, create: create)
        }
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(code: rc, message: message)
        }
        db = handle
        sqlite3_busy_timeout(db, 5_000)
    }

    /// Creates `path` empty with mode 0600 (SQLite takes an empty file for a new database) and
    /// removes group/other bits from the database and its companions if this user owns them.
    ///
    /// An existing file is never opened for reading or writing here: closing such a descriptor
    /// would drop every POSIX record lock this process holds on the file, those of its other
    /// connections to the database included, and SQLite relies on them to share the database
    /// with other processes. A path-only descriptor (`O_PATH`) carries no locks and drops none.
    private static func preparePrivateFile(_ path: String, create: Bool) throws(SQLiteError) {
        if create {
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                close(fd)  // a new file: no connection holds a lock on it yet
            } else if errno != EEXIST {
                let reason = String(cString: strerror(errno))
                throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot create \(path): \(reason)")
            }
        }
        for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
            let fd = open(file, openPathOnly | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var info = stat()
            guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(),
                info.st_mode & 0o077 != 0
            else { continue }
            // `fchmod` refuses a path-only descriptor; its `/proc` name reaches the same file.
            _ = chmod("/proc/self/fd/\(fd)", info.st_mode & 0o700)
        }
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(db)
    }

    /// Runs one or more statements that return no rows.
    package func execute(_ sql: String) throws(SQLiteError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? lastErrorMessage
            sqlite3_free(errorMessage)
            throw SQLiteError(code: rc, message: "\(message) in: \(sql.prefix(80))")
        }
    }

    /// A prepared statement for `sql`, reset and with its bindings cleared.
    package func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else {
            throw SQLiteError(code: rc, message: "\(lastErrorMessage) in: \(sql.prefix(80))")
        }
        let statement = SQLiteStatement(raw, connection: self)
        statements[sql] = statement
        return statement
    }

    /// Resets every cached statement, releasing the read locks of unfinished ones.
    package func resetAll() {
        for statement in statements.values { statement.reset() }
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`; rolls back if it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// `PRAGMA user_version`, the schema version the migrations maintain.
    package var userVersion: Int {
        get throws(SQLiteError) {
            let statement = try statement("PRAGMA user_version")
            _ = try statement.step()
            defer { statement.reset() }
            return Int(statement.int64(0))
        }
    }

    package var lastErrorMessage: String { String(cString: sqlite3_errmsg(db)) }
}

/// A prepared statement. Bind indexes are 1-based, column indexes 0-based (as in SQLite).
package final class SQLiteStatement {
    private let raw: OpaquePointer
    private unowned let connection: SQLiteConnection

    init(_ raw: OpaquePointer, connection: SQLiteConnection) {
        self.raw = raw
        self.connection = connection
    }

    deinit { sqlite3_finalize(raw) }

    package func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    package func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(raw, index, value) }
    package func bind(_ index: Int32, _ value: String) {
        sqlite3_bind_text(raw, index, value, -1, syncfs_sqlite_transient())
    }
    package func bindNull(_ index: Int32) { sqlite3_bind_null(raw, index) }

    package func bind(_ index: Int32, bytes: [UInt8]?) {
        guard let bytes else { return bindNull(index) }
        bytes.withUnsafeBytes { bind(index, bytes: $0) }
    }

    /// Binds a blob copied from `buffer` (valid only during the call).
    package func bind(_ index: Int32, bytes buffer: UnsafeRawBufferPointer) {
        // A zero-length blob must still be a blob, not NULL: SQLite needs a non-nil pointer.
        let base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        _ = sqlite3_bind_blob64(raw, index, base, sqlite3_uint64(buffer.count), syncfs_sqlite_transient())
    }

    /// Steps once: `true` when a row is available, `false` when done.
    package func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(raw)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError(code: rc, message: connection.lastErrorMessage)
        }
    }

    /// Steps until done, for statements that return no rows.
    package func run() throws(SQLiteError) {
        while try step() {}
    }

    package func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }
    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }

    package func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(raw, column) else { return "" }
        return String(cString: pointer)
    }

    /// The column's text as UTF-8 bytes, in place (valid only inside `body`; empty for NULL):
    /// for values parsed at once, without a `String` per row.
    package func withUTF8Text<Result>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        guard let pointer = sqlite3_column_text(raw, column) else {
            return body(UnsafeBufferPointer(start: nil, count: 0))
        }
        return body(UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(raw, column))))
    }

    package func bytes(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let pointer = sqlite3_column_blob(raw, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
