import SQLiteSupport
import SyncBackend

/// The embedded server's `AccessStore`: the tables of `ROOT/.syncfs-server/tokens.db`
/// (`TokenStoreSchema`), through the `TokenStore`'s one connection. Each call runs its SQL in one
/// statement or one `BEGIN IMMEDIATE` transaction, off Swift's cooperative threads (`Offload`).
/// Several processes may use the database at once (WAL, SQLite's busy timeout).
public struct EmbeddedAccessStore: AccessStore {
    let store: TokenStore

    public init(store: TokenStore) { self.store = store }

    /// Runs `body` under the store's lock off the cooperative pool; in a write transaction if `writing`.
    func run<T: Sendable>(
        writing: Bool, _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) async throws(SyncServerError) -> T {
        let store = store
        return try await Offload.run { () throws(SyncServerError) -> T in
            writing ? try store.write(body) : try store.read(body)
        }
    }

    // MARK: Tokens

    static let tokenColumns =
        "id, user, device, role, label, created, expires, revoked, last_used, last_address"

    public func insertToken(_ token: TokenRecord, digest: String) async throws(SyncServerError) -> Bool {
        try await run(writing: true) { connection in
            let taken = try connection.statement("SELECT 1 FROM tokens WHERE id = ? OR digest = ?")
            defer { taken.reset() }
            taken.bind(1, token.id)
            taken.bind(2, digest)
            if try taken.step() { return false }
            let insert = try connection.statement(
                """
                INSERT INTO tokens (id, digest, container, label, created, user, device, role, expires)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            insert.bind(1, token.id)
            insert.bind(2, digest)
            insert.bind(3, token.containers.first ?? "")
            insert.bind(4, token.label)
            insert.bind(5, token.created)
            insert.bindOptional(6, token.user)
            insert.bindOptional(7, token.device)
            insert.bind(8, token.role.rawValue)
            insert.bindOptional(9, token.expires)
            try insert.run()
            let member = try connection.statement("INSERT INTO token_containers (token, container) VALUES (?, ?)")
            for container in Set(token.containers) {
                member.reset()
                member.bind(1, token.id)
                member.bind(2, container)
                try member.run()
            }
            return true
        }
    }

    public func token(digest: String) async throws(SyncServerError) -> TokenRecord? {
        try await run(writing: false) { connection in
            let find = try connection.statement("SELECT \(Self.tokenColumns) FROM tokens WHERE digest = ?")
            defer { find.reset() }
            find.bind(1, digest)
            guard try find.step() else { return nil }
            var token = try Self.tokenRecord(find)
            find.reset()
            token.containers = try Self.containers(of: token.id, connection)
            return token
        }
    }

    public func tokens() async throws(SyncServerError) -> [TokenRecord] {
        try await run(writing: false) { connection in
            let all = try connection.statement("SELECT \(Self.tokenColumns) FROM tokens ORDER BY created, id")
            defer { all.reset() }
            var found: [TokenRecord] = []
            while try all.step() { found.append(try Self.tokenRecord(all)) }
            all.reset()
            for index in found.indices {
                found[index].containers = try Self.containers(of: found[index].id, connection)
            }
            return found
        }
    }

    public func revokeToken(id: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await revoke(table: "tokens", id: id, at: time)
    }

    public func touchToken(id: String, at time: Int64, address: String?) async throws(SyncServerError) {
        try await run(writing: true) { connection in
            let update = try connection.statement("UPDATE tokens SET last_used = ?, last_address = ? WHERE id = ?")
            update.bind(1, time)
            update.bindOptional(2, address)
            update.bind(3, id)
            try update.run()
        }
    }

    /// Sets `revoked` on the row `id` of `table` (`tokens`, `devices`, `links`) if it is unset.
    func revoke(table: String, id: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await run(writing: true) { connection -> Bool? in
            let find = try connection.statement("SELECT revoked FROM \(table) WHERE id = ?")
            defer { find.reset() }
            find.bind(1, id)
            guard try find.step() else { return nil }
            guard find.isNull(0) else { return false }
            find.reset()
            let update = try connection.statement("UPDATE \(table) SET revoked = ? WHERE id = ?")
            update.bind(1, time)
            update.bind(2, id)
            try update.run()
            return true
        }
    }

    private static func tokenRecord(_ row: SQLiteStatement) throws -> TokenRecord {
        guard let role = AccessRole(rawValue: row.text(3)) else {
            throw SyncServerError(.failed, "a token row has the unknown role '\(row.text(3))'")
        }
        return TokenRecord(
            id: row.text(0), user: row.optionalText(1), device: row.optionalText(2), containers: [], role: role,
            label: row.text(4), created: row.int64(5), expires: row.optionalInt64(6), revoked: row.optionalInt64(7),
            lastUsed: row.optionalInt64(8), lastAddress: row.optionalText(9))
    }

    private static func containers(of token: String, _ connection: SQLiteConnection) throws -> [String] {
        let list = try connection.statement(
            "SELECT container FROM token_containers WHERE token = ? ORDER BY container")
        defer { list.reset() }
        list.bind(1, token)
        var containers: [String] = []
        while try list.step() { containers.append(list.text(0)) }
        return containers
    }

    // MARK: Users

    static let userColumns = "name, password_hash, totp_secret, totp_last_step, created, disabled"

    public func insertUser(_ user: UserRecord) async throws(SyncServerError) -> Bool {
        try await run(writing: true) { connection in
            let taken = try connection.statement("SELECT 1 FROM users WHERE name = ?")
            defer { taken.reset() }
            taken.bind(1, user.name)
            if try taken.step() { return false }
            let insert = try connection.statement("INSERT INTO users (\(Self.userColumns)) VALUES (?, ?, ?, ?, ?, ?)")
            Self.bindUser(user, insert)
            try insert.run()
            return true
        }
    }

    public func user(named name: String) async throws(SyncServerError) -> UserRecord? {
        try await run(writing: false) { connection in
            let find = try connection.statement("SELECT \(Self.userColumns) FROM users WHERE name = ?")
            defer { find.reset() }
            find.bind(1, name)
            return try find.step() ? Self.userRecord(find) : nil
        }
    }

    public func users() async throws(SyncServerError) -> [UserRecord] {
        try await run(writing: false) { connection in
            let all = try connection.statement("SELECT \(Self.userColumns) FROM users ORDER BY name")
            defer { all.reset() }
            var found: [UserRecord] = []
            while try all.step() { found.append(Self.userRecord(all)) }
            return found
        }
    }

    public func changeUser(_ name: String, _ change: UserChange) async throws(SyncServerError) -> Bool? {
        try await run(writing: true) { connection -> Bool? in
            let update: SQLiteStatement
            switch change {
            case .passwordHash(let hash):
                update = try connection.statement("UPDATE users SET password_hash = ?2 WHERE name = ?1")
                update.bind(2, hash)
            case .totpSecret(let secret):
                update = try connection.statement(
                    "UPDATE users SET totp_secret = ?2, totp_last_step = NULL WHERE name = ?1")
                update.bindOptional(2, secret)
            case .disabled(let time):
                update = try connection.statement("UPDATE users SET disabled = ?2 WHERE name = ?1")
                update.bindOptional(2, time)
            case .acceptedTOTPStep(let step):
                update = try connection.statement(
                    """
                    UPDATE users SET totp_last_step = ?2
                    WHERE name = ?1 AND (totp_last_step IS NULL OR totp_last_step < ?2)
                    """)
                update.bind(2, step)
            }
            update.bind(1, name)
            try update.run()
            let changed = try connection.statement("SELECT changes()")
            defer { changed.reset() }
            _ = try changed.step()
            if changed.int64(0) > 0 { return true }
            changed.reset()
            let exists = try connection.statement("SELECT 1 FROM users WHERE name = ?")
            defer { exists.reset() }
            exists.bind(1, name)
            return try exists.step() ? false : nil
        }
    }

    private static func bindUser(_ user: UserRecord, _ statement: SQLiteStatement) {
        statement.bind(1, user.name)
        statement.bindOptional(2, user.passwordHash)
        statement.bindOptional(3, user.totpSecret)
        statement.bindOptional(4, user.totpLastStep)
        statement.bind(5, user.created)
        statement.bindOptional(6, user.disabled)
    }

    private static func userRecord(_ row: SQLiteStatement) -> UserRecord {
        UserRecord(
            name: row.text(0), passwordHash: row.optionalText(1), totpSecret: row.optionalText(2),
            totpLastStep: row.optionalInt64(3), created: row.int64(4), disabled: row.optionalInt64(5))
    }
}

extension SQLiteStatement {
    func bindOptional(_ index: Int32, _ value: String?) {
        if let value { bind(index, value) } else { bindNull(index) }
    }

    func bindOptional(_ index: Int32, _ value: Int64?) {
        if let value { bind(index, value) } else { bindNull(index) }
    }

    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }
}
