import Crypto
import Foundation
import Glibc
import SQLiteSupport
import SyncBackend
import Synchronization

/// The server's access tokens: `ROOT/.syncfs-server/tokens.db` (SQLite, WAL; the directory is
/// mode 0700, the database 0600).
///
/// Contract:
/// - A token is `sfs_` and 64 lowercase hex digits (32 bytes from the system's secure random
///   generator). Only its SHA-256 is stored: `create` is the only time the token is seen.
/// - A token made by `create` (a legacy token) opens one container and has a short public ID (8 hex digits) that
///   `list` shows and `revoke` takes; revoked tokens stay listed, and never authenticate again.
/// - The database also holds accounts, memberships, links and the audit log
///   (`EmbeddedAccessStore`); what a token may do is `AccessControl`'s to decide.
/// - Several processes may use the database at once (WAL; SQLite's busy timeout).
///
/// The connection is used under a lock for one short statement at a time; the server calls
/// `authenticate` off Swift's cooperative threads (`Offload`).
public final class TokenStore: Sendable {
    /// One token as `list` shows it (never the token itself).
    public struct Record: Codable, Equatable, Sendable {
        /// The public ID, 8 hex digits.
        public var id: String
        public var container: String
        public var label: String
        /// Unix seconds.
        public var created: Int64
        /// Unix seconds, or nil while the token is valid.
        public var revoked: Int64?

        public init(id: String, container: String, label: String, created: Int64, revoked: Int64?) {
            self.id = id
            self.container = container
            self.label = label
            self.created = created
            self.revoked = revoked
        }
    }

    /// The database's directory under a server root.
    public static func directory(root: String) -> String { root + "/.syncfs-server" }
    /// The database's path under a server root.
    public static func path(root: String) -> String { directory(root: root) + "/tokens.db" }

    /// The prefix of every token.
    public static let tokenPrefix = "sfs_"

    let connection: Mutex<SQLiteConnection>
    public let path: String

    /// Opens the token database of the server root `root`, creating its directory (0700) and the
    /// database (0600) if they are missing. `root` must exist.
    public init(root: String) throws(SyncServerError) {
        let directory = Self.directory(root: root)
        path = Self.path(root: root)
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw SyncServerError(.cannotCreate, "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        // Tighten what an older or foreign setup left wider; a failure here is not fatal.
        _ = chmod(directory, 0o700)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SyncServerError(.cannotCreate, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        close(descriptor)
        _ = chmod(path, 0o600)
        do {
            let connection = try SQLiteConnection(path: path, create: false)
            try connection.execute("PRAGMA journal_mode = WAL")
            try TokenStoreSchema.migrations.migrate(connection)
            self.connection = Mutex(connection)
        } catch let error as SQLiteSchemaTooNew {
            throw SyncServerError(.badInput, "\(path): \(error)")
        } catch {
            throw SyncServerError(.cannotCreate, "cannot open \(path): \(error)")
        }
    }

    /// Opens the token database of `root` if it exists (for commands that only read it).
    public static func openIfPresent(root: String) throws(SyncServerError) -> TokenStore? {
        guard FileManager.default.fileExists(atPath: path(root: root)) else { return nil }
        return try TokenStore(root: root)
    }

    /// Makes a token for `container`. Returns its public ID and the token (shown only now).
    public func create(container: String, label: String) throws(SyncServerError) -> (id: String, token: String) {
        guard ContainerName.isValid(container) else {
            throw SyncServerError(.badInput, "'\(container)' is not a valid container name")
        }
        var generator = SystemRandomNumberGenerator()
        let token =
            Self.tokenPrefix + Self.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let created = Int64(Date().timeIntervalSince1970)
        // A new random ID until one is free (8 hex digits: collisions are rare but possible).
        for _ in 0..<16 {
            let id = Self.hex((0..<4).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
            let inserted = try write { connection throws -> Bool in
                let taken = try connection.statement("SELECT 1 FROM tokens WHERE id = ?")
                defer { taken.reset() }
                taken.bind(1, id)
                if try taken.step() { return false }
                let insert = try connection.statement(
                    "INSERT INTO tokens (id, digest, container, label, created) VALUES (?, ?, ?, ?, ?)")
                insert.bind(1, id)
                insert.bind(2, Self.digest(of: token))
                insert.bind(3, container)
                insert.bind(4, label)
                insert.bind(5, created)
                try insert.run()
                let opens = try connection.statement("INSERT INTO token_containers (token, container) VALUES (?, ?)")
                opens.bind(1, id)
                opens.bind(2, container)
                try opens.run()
                return true
            }
            if inserted { return (id, token) }
        }
        throw SyncServerError(.failed, "cannot find a free token ID in \(path)")
    }

    /// Every token ever made, oldest first.
    public func list() throws(SyncServerError) -> [Record] {
        try read { connection in
            let statement = try connection.statement(
                "SELECT id, container, label, created, revoked FROM tokens ORDER BY created, id")
            defer { statement.reset() }
            var records: [Record] = []
            while try statement.step() {
                records.append(
                    Record(
                        id: statement.text(0), container: statement.text(1), label: statement.text(2),
                        created: statement.int64(3), revoked: statement.isNull(4) ? nil : statement.int64(4)))
            }
            return records
        }
    }

    /// Revokes the token with this public ID. Returns false if it was revoked already; an unknown
    /// ID is `badInput`.
    @discardableResult
    public func revoke(id: String) throws(SyncServerError) -> Bool {
        let outcome = try write { connection throws -> Bool? in
            let find = try connection.statement("SELECT revoked FROM tokens WHERE id = ?")
            defer { find.reset() }
            find.bind(1, id)
            guard try find.step() else { return nil }
            guard find.isNull(0) else { return false }
            find.reset()
            let update = try connection.statement("UPDATE tokens SET revoked = ? WHERE id = ?")
            update.bind(1, Int64(Date().timeIntervalSince1970))
            update.bind(2, id)
            try update.run()
            return true
        }
        guard let outcome else { throw SyncServerError(.badInput, "no token with ID '\(id)' (see `token list`)") }
        return outcome
    }

    /// `sfs_` and 64 lowercase hex digits.
    static func isWellFormed(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        let prefix = Array(tokenPrefix.utf8)
        guard bytes.count == prefix.count + 64, bytes.starts(with: prefix) else { return false }
        return bytes.dropFirst(prefix.count).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    static func digest(of token: String) -> String { hex(Array(SHA256.hash(data: Array(token.utf8)))) }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    func read<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(SyncServerError) -> T {
        try withConnection(writing: false, body)
    }

    func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(SyncServerError) -> T {
        try withConnection(writing: true, body)
    }

    /// Runs `body` under the lock (in a write transaction if `writing`), mapping its failures.
    private func withConnection<T: Sendable>(
        writing: Bool, _ body: (SQLiteConnection) throws -> T
    ) throws(SyncServerError) -> T {
        try connection.withLock { (connection: inout SQLiteConnection) throws(SyncServerError) -> T in
            do {
                return writing ? try connection.transaction { try body(connection) } : try body(connection)
            } catch {
                throw SyncServerError(.failed, "cannot \(writing ? "write" : "read") \(path): \(error)")
            }
        }
    }
}
