import SQLiteSupport
import SyncBackend

/// Devices, memberships, enrolment codes and failed attempts in `tokens.db`.
extension EmbeddedAccessStore {
    // MARK: Devices

    public func insertDevice(_ device: DeviceRecord) async throws(SyncServerError) -> Bool {
        try await run(writing: true) { connection in
            let taken = try connection.statement("SELECT 1 FROM devices WHERE id = ?")
            defer { taken.reset() }
            taken.bind(1, device.id)
            if try taken.step() { return false }
            let insert = try connection.statement(
                "INSERT INTO devices (id, user, name, created, revoked) VALUES (?, ?, ?, ?, ?)")
            insert.bind(1, device.id)
            insert.bind(2, device.user)
            insert.bind(3, device.name)
            insert.bind(4, device.created)
            insert.bindOptional(5, device.revoked)
            try insert.run()
            return true
        }
    }

    public func device(id: String) async throws(SyncServerError) -> DeviceRecord? {
        try await run(writing: false) { connection in
            let find = try connection.statement("SELECT id, user, name, created, revoked FROM devices WHERE id = ?")
            defer { find.reset() }
            find.bind(1, id)
            return try find.step() ? Self.deviceRecord(find) : nil
        }
    }

    public func devices(user: String?) async throws(SyncServerError) -> [DeviceRecord] {
        try await run(writing: false) { connection in
            let list = try connection.statement(
                "SELECT id, user, name, created, revoked FROM devices WHERE ?1 IS NULL OR user = ?1 ORDER BY created, id"
            )
            defer { list.reset() }
            list.bindOptional(1, user)
            var found: [DeviceRecord] = []
            while try list.step() { found.append(Self.deviceRecord(list)) }
            return found
        }
    }

    public func revokeDevice(id: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await revoke(table: "devices", id: id, at: time)
    }

    private static func deviceRecord(_ row: SQLiteStatement) -> DeviceRecord {
        DeviceRecord(
            id: row.text(0), user: row.text(1), name: row.text(2), created: row.int64(3),
            revoked: row.optionalInt64(4))
    }

    // MARK: Memberships

    public func setMembership(_ membership: MembershipRecord) async throws(SyncServerError) {
        try await run(writing: true) { connection in
            let upsert = try connection.statement(
                """
                INSERT INTO memberships (user, container, role) VALUES (?, ?, ?)
                ON CONFLICT (user, container) DO UPDATE SET role = excluded.role
                """)
            upsert.bind(1, membership.user)
            upsert.bind(2, membership.container)
            upsert.bind(3, membership.role.rawValue)
            try upsert.run()
        }
    }

    public func removeMembership(user: String, container: String) async throws(SyncServerError) -> Bool {
        try await run(writing: true) { connection in
            let delete = try connection.statement(
                "DELETE FROM memberships WHERE user = ? AND container = ? RETURNING 1")
            defer { delete.reset() }
            delete.bind(1, user)
            delete.bind(2, container)
            let removed = try delete.step()
            if removed { try delete.run() }
            return removed
        }
    }

    public func memberships(container: String?) async throws(SyncServerError) -> [MembershipRecord] {
        try await run(writing: false) { connection in
            let list = try connection.statement(
                """
                SELECT user, container, role FROM memberships WHERE ?1 IS NULL OR container = ?1
                ORDER BY container, user
                """)
            defer { list.reset() }
            list.bindOptional(1, container)
            var found: [MembershipRecord] = []
            while try list.step() {
                guard let role = AccessRole(rawValue: list.text(2)) else {
                    throw SyncServerError(.failed, "a membership row has the unknown role '\(list.text(2))'")
                }
                found.append(MembershipRecord(user: list.text(0), container: list.text(1), role: role))
            }
            return found
        }
    }

    public func roles(user: String) async throws(SyncServerError) -> [String: AccessRole] {
        try await run(writing: false) { connection in
            let list = try connection.statement("SELECT container, role FROM memberships WHERE user = ?")
            defer { list.reset() }
            list.bind(1, user)
            var roles: [String: AccessRole] = [:]
            while try list.step() {
                guard let role = AccessRole(rawValue: list.text(1)) else {
                    throw SyncServerError(.failed, "a membership row has the unknown role '\(list.text(1))'")
                }
                roles[list.text(0)] = role
            }
            return roles
        }
    }

    // MARK: Enrolment codes

    public func insertEnrolment(digest: String, user: String, expires: Int64) async throws(SyncServerError) {
        try await run(writing: true) { connection in
            let insert = try connection.statement(
                "INSERT OR REPLACE INTO enrolments (digest, user, expires) VALUES (?, ?, ?)")
            insert.bind(1, digest)
            insert.bind(2, user)
            insert.bind(3, expires)
            try insert.run()
        }
    }

    public func takeEnrolment(digest: String, at time: Int64) async throws(SyncServerError) -> String? {
        try await run(writing: true) { connection -> String? in
            let take = try connection.statement("DELETE FROM enrolments WHERE digest = ? RETURNING user, expires")
            defer { take.reset() }
            take.bind(1, digest)
            guard try take.step() else { return nil }
            let user = take.text(0)
            let expires = take.int64(1)
            try take.run()
            return time < expires ? user : nil
        }
    }

    // MARK: Failed attempts

    public func noteFailure(key: String, at time: Int64) async throws(SyncServerError) {
        try await run(writing: true) { connection in
            let insert = try connection.statement("INSERT INTO failures (key, time) VALUES (?, ?)")
            insert.bind(1, key)
            insert.bind(2, time)
            try insert.run()
        }
    }

    public func failures(key: String, since time: Int64) async throws(SyncServerError) -> Int {
        try await run(writing: false) { connection in
            let count = try connection.statement("SELECT count(*) FROM failures WHERE key = ? AND time >= ?")
            defer { count.reset() }
            count.bind(1, key)
            count.bind(2, time)
            _ = try count.step()
            return Int(count.int64(0))
        }
    }

    public func clearFailures(key: String?, before: Int64) async throws(SyncServerError) {
        try await run(writing: true) { connection in
            let delete = try connection.statement("DELETE FROM failures WHERE key = ?1 OR time < ?2")
            delete.bindOptional(1, key)
            delete.bind(2, before)
            try delete.run()
        }
    }
}
