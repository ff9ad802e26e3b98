import PostgresNIO
import SyncBackend

/// Users, devices, memberships and enrolment codes (`syncfs_users`, `syncfs_devices`,
/// `syncfs_members`, `syncfs_enrolments`), with `PostgresAccessTables`' contract.
extension PostgresAccessTables {
    // MARK: Users

    /// Inserts a user; false if the name is taken.
    public func insertUser(_ user: PostgresUserRow) async throws(ContainerProtocolError) -> Bool {
        try await store.run("record a user") { client in
            let rows = try await client.query(
                """
                INSERT INTO syncfs_users (name, password_hash, totp_secret, totp_last_step, created, disabled)
                VALUES (\(user.name), \(user.passwordHash), \(user.totpSecret), \(user.totpLastStep),
                    \(user.created), \(user.disabled))
                ON CONFLICT DO NOTHING RETURNING name
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    public func user(named name: String) async throws(ContainerProtocolError) -> PostgresUserRow? {
        try await store.run("look up a user") { client in
            try await Self.userRows(
                client.query(
                    """
                    SELECT name, password_hash, totp_secret, totp_last_step, created, disabled
                    FROM syncfs_users WHERE name = \(name)
                    """)
            ).first
        }
    }

    /// Every user, by name.
    public func users() async throws(ContainerProtocolError) -> [PostgresUserRow] {
        try await store.run("list the users") { client in
            try await Self.userRows(
                client.query(
                    """
                    SELECT name, password_hash, totp_secret, totp_last_step, created, disabled
                    FROM syncfs_users ORDER BY name
                    """))
        }
    }

    /// Replaces the row of the user named `user.name`; nil if there is none.
    /// One column change of user `name` (`AccessStore.changeUser`'s contract): nil if there is no
    /// such user, false when an accepted TOTP step is not later than the stored one.
    public func changeUser(
        _ name: String, _ change: PostgresUserChange
    ) async throws(ContainerProtocolError) -> Bool? {
        try await store.run("update a user") { client -> Bool? in
            let rows: PostgresRowSequence
            switch change {
            case .passwordHash(let hash):
                rows = try await client.query(
                    "UPDATE syncfs_users SET password_hash = \(hash) WHERE name = \(name) RETURNING name")
            case .totpSecret(let secret):
                rows = try await client.query(
                    """
                    UPDATE syncfs_users SET totp_secret = \(secret), totp_last_step = NULL
                    WHERE name = \(name) RETURNING name
                    """)
            case .disabled(let time):
                rows = try await client.query(
                    "UPDATE syncfs_users SET disabled = \(time) WHERE name = \(name) RETURNING name")
            case .acceptedTOTPStep(let step):
                rows = try await client.query(
                    """
                    UPDATE syncfs_users SET totp_last_step = \(step)
                    WHERE name = \(name) AND (totp_last_step IS NULL OR totp_last_step < \(step)) RETURNING name
                    """)
            }
            for try await _ in rows.decode(String.self) { return true }
            let exists = try await client.query("SELECT name FROM syncfs_users WHERE name = \(name)")
            for try await _ in exists.decode(String.self) { return false }
            return nil
        }
    }

    private static func userRows(_ rows: PostgresRowSequence) async throws -> [PostgresUserRow] {
        var found: [PostgresUserRow] = []
        for try await (name, password, totp, step, created, disabled) in rows.decode(
            (String, String?, String?, Int64?, Int64, Int64?).self)
        {
            found.append(
                PostgresUserRow(
                    name: name, passwordHash: password, totpSecret: totp, totpLastStep: step, created: created,
                    disabled: disabled))
        }
        return found
    }

    // MARK: Devices

    /// Inserts a device; false if its ID is taken.
    public func insertDevice(_ device: PostgresDeviceRow) async throws(ContainerProtocolError) -> Bool {
        try await store.run("record a device") { client in
            let rows = try await client.query(
                """
                INSERT INTO syncfs_devices (id, user_name, name, created, revoked)
                VALUES (\(device.id), \(device.user), \(device.name), \(device.created), \(device.revoked))
                ON CONFLICT DO NOTHING RETURNING id
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    public func device(id: String) async throws(ContainerProtocolError) -> PostgresDeviceRow? {
        try await store.run("look up a device") { client in
            try await Self.deviceRows(
                client.query("SELECT id, user_name, name, created, revoked FROM syncfs_devices WHERE id = \(id)")
            ).first
        }
    }

    /// The devices of `user` (every user's with nil), oldest first.
    public func devices(user: String?) async throws(ContainerProtocolError) -> [PostgresDeviceRow] {
        try await store.run("list the devices") { client in
            guard let user else {
                return try await Self.deviceRows(
                    client.query(
                        "SELECT id, user_name, name, created, revoked FROM syncfs_devices ORDER BY created, id"))
            }
            return try await Self.deviceRows(
                client.query(
                    """
                    SELECT id, user_name, name, created, revoked FROM syncfs_devices
                    WHERE user_name = \(user) ORDER BY created, id
                    """))
        }
    }

    /// Revokes device `id` at `time`: true if it was valid, false if revoked already, nil if unknown.
    public func revokeDevice(id: String, at time: Int64) async throws(ContainerProtocolError) -> Bool? {
        try await store.run("revoke a device") { client -> Bool? in
            try await Self.firstBool(
                client.query(
                    """
                    WITH target AS (SELECT id, revoked FROM syncfs_devices WHERE id = \(id) FOR UPDATE),
                         changed AS (UPDATE syncfs_devices SET revoked = \(time)
                                     WHERE id IN (SELECT id FROM target WHERE revoked IS NULL) RETURNING id)
                    SELECT (SELECT count(*) FROM changed) > 0 FROM target
                    """))
        }
    }

    private static func deviceRows(_ rows: PostgresRowSequence) async throws -> [PostgresDeviceRow] {
        var found: [PostgresDeviceRow] = []
        for try await (id, user, name, created, revoked) in rows.decode((String, String, String, Int64, Int64?).self) {
            found.append(PostgresDeviceRow(id: id, user: user, name: name, created: created, revoked: revoked))
        }
        return found
    }

    // MARK: Memberships

    /// Gives `member.user` the role `member.role` in `member.container`, replacing any other.
    public func setMembership(_ member: PostgresMemberRow) async throws(ContainerProtocolError) {
        try await store.run("record a membership") { client in
            _ = try await client.query(
                """
                INSERT INTO syncfs_members (user_name, container, role)
                VALUES (\(member.user), \(member.container), \(member.role.rawValue))
                ON CONFLICT (user_name, container) DO UPDATE SET role = excluded.role
                """)
        }
    }

    /// Removes `user` from `container`: false if they were not a member.
    public func removeMembership(user: String, container: String) async throws(ContainerProtocolError) -> Bool {
        try await store.run("remove a membership") { client in
            let rows = try await client.query(
                """
                DELETE FROM syncfs_members WHERE user_name = \(user) AND container = \(container)
                RETURNING user_name
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    /// The members of `container` (every membership with nil), by container then user.
    public func memberships(container: String?) async throws(ContainerProtocolError) -> [PostgresMemberRow] {
        try await store.run("list the members") { client in
            let rows: PostgresRowSequence
            if let container {
                rows = try await client.query(
                    """
                    SELECT user_name, container, role FROM syncfs_members
                    WHERE container = \(container) ORDER BY container, user_name
                    """)
            } else {
                rows = try await client.query(
                    "SELECT user_name, container, role FROM syncfs_members ORDER BY container, user_name")
            }
            var found: [PostgresMemberRow] = []
            for try await (user, container, role) in rows.decode((String, String, String).self) {
                found.append(PostgresMemberRow(user: user, container: container, role: try Self.role(role)))
            }
            return found
        }
    }

    /// `user`'s role in each container they are a member of.
    public func roles(user: String) async throws(ContainerProtocolError) -> [String: AccessRole] {
        try await store.run("look up a user's roles") { client in
            let rows = try await client.query(
                "SELECT container, role FROM syncfs_members WHERE user_name = \(user)")
            var roles: [String: AccessRole] = [:]
            for try await (container, role) in rows.decode((String, String).self) {
                roles[container] = try Self.role(role)
            }
            return roles
        }
    }

    // MARK: Enrolment codes

    /// Stores a one-time enrolment code for `user` (its digest) until `expires`.
    public func insertEnrolment(digest: String, user: String, expires: Int64) async throws(ContainerProtocolError) {
        try await store.run("record an enrolment code") { client in
            _ = try await client.query(
                "INSERT INTO syncfs_enrolments (digest, user_name, expires) VALUES (\(digest), \(user), \(expires))")
        }
    }

    /// Takes the code with this digest in one statement: the user it enrols if it is still good at
    /// `time` (it expires at `expires`), else nil; the code is deleted either way (with every code
    /// expired at `time`), so two concurrent takes of one code enrol once.
    public func takeEnrolment(digest: String, at time: Int64) async throws(ContainerProtocolError) -> String? {
        try await store.run("take an enrolment code") { client -> String? in
            let rows = try await client.query(
                """
                WITH taken AS (DELETE FROM syncfs_enrolments WHERE digest = \(digest) OR expires <= \(time)
                               RETURNING digest, user_name, expires)
                SELECT user_name FROM taken WHERE digest = \(digest) AND expires > \(time)
                """)
            for try await user in rows.decode(String.self) { return user }
            return nil
        }
    }
}

/// One column change of a user's row (`PostgresAccessTables.changeUser`).
public enum PostgresUserChange: Sendable {
    case passwordHash(String)
    case totpSecret(String?)
    case disabled(Int64?)
    case acceptedTOTPStep(Int64)
}
