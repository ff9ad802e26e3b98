import SyncBackend
import SyncPostgres
import SyncServer

/// The `AccessStore` of a server on PostgreSQL (`serve --database`): the access tables of a
/// `PostgresStore` (`PostgresAccessTables`, schema 7), shared by every serve process on the
/// database.
///
/// Contract (`AccessStore`'s): rows only, no decisions and no cache; a database that cannot be
/// reached throws `SyncServerError` `.failed` with the store's redacted reason, never "no such
/// row".
public struct PostgresAccess: AccessStore {
    public let tables: PostgresAccessTables

    public init(store: PostgresStore) { self.tables = PostgresAccessTables(store: store) }

    /// Runs one call of the tables, its failure as the server's error: the store's reason (already
    /// redacted, and naming PostgreSQL), which the server puts after what it was doing.
    func attempt<T: Sendable>(_ body: () async throws -> T) async throws(SyncServerError) -> T {
        do {
            return try await body()
        } catch let error as ContainerProtocolError {
            switch error {
            case .unavailable(let reason), .busy(let reason), .storageFailure(let reason):
                throw SyncServerError(.failed, reason)
            default: throw SyncServerError(.failed, "\(error)")
            }
        } catch {
            throw SyncServerError(.failed, "\(error)")
        }
    }

    // MARK: Tokens

    public func insertToken(_ token: TokenRecord, digest: String) async throws(SyncServerError) -> Bool {
        try await attempt {
            try await tables.insertToken(PostgresTokenRow(token), digest: digest)
        }
    }

    public func token(digest: String) async throws(SyncServerError) -> TokenRecord? {
        try await attempt { try await tables.token(digest: digest) }
            .map(TokenRecord.init)
    }

    public func standing(digest: String) async throws(SyncServerError) -> TokenStanding? {
        try await attempt { try await tables.standing(digest: digest) }
            .map { standing in
                TokenStanding(
                    token: TokenRecord(standing.token), user: standing.user.map(UserRecord.init),
                    device: standing.device.map(DeviceRecord.init), memberships: standing.roles)
            }
    }

    public func tokens() async throws(SyncServerError) -> [TokenRecord] {
        try await attempt { try await tables.tokens() }.map(TokenRecord.init)
    }

    public func revokeToken(id: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await attempt { try await tables.revokeToken(id: id, at: time) }
    }

    public func touchToken(id: String, at time: Int64, address: String?) async throws(SyncServerError) {
        try await attempt {
            try await tables.touchToken(id: id, at: time, address: address)
        }
    }

    // MARK: Users

    public func insertUser(_ user: UserRecord) async throws(SyncServerError) -> Bool {
        try await attempt { try await tables.insertUser(PostgresUserRow(user)) }
    }

    public func user(named name: String) async throws(SyncServerError) -> UserRecord? {
        try await attempt { try await tables.user(named: name) }
            .map(UserRecord.init)
    }

    public func users() async throws(SyncServerError) -> [UserRecord] {
        try await attempt { try await tables.users() }.map(UserRecord.init)
    }

    public func changeUser(_ name: String, _ change: UserChange) async throws(SyncServerError) -> Bool? {
        let row: PostgresUserChange
        switch change {
        case .passwordHash(let hash): row = .passwordHash(hash)
        case .totpSecret(let secret): row = .totpSecret(secret)
        case .disabled(let time): row = .disabled(time)
        case .acceptedTOTPStep(let step): row = .acceptedTOTPStep(step)
        }
        return try await attempt { try await tables.changeUser(name, row) }
    }

    // MARK: Devices

    public func insertDevice(_ device: DeviceRecord) async throws(SyncServerError) -> Bool {
        try await attempt {
            try await tables.insertDevice(PostgresDeviceRow(device))
        }
    }

    public func device(id: String) async throws(SyncServerError) -> DeviceRecord? {
        try await attempt { try await tables.device(id: id) }
            .map(DeviceRecord.init)
    }

    public func devices(user: String?) async throws(SyncServerError) -> [DeviceRecord] {
        try await attempt { try await tables.devices(user: user) }
            .map(DeviceRecord.init)
    }

    public func revokeDevice(id: String, at time: Int64) async throws(SyncServerError) -> Bool? {
        try await attempt { try await tables.revokeDevice(id: id, at: time) }
    }

    // MARK: Memberships

    public func setMembership(_ membership: MembershipRecord) async throws(SyncServerError) {
        try await attempt {
            try await tables.setMembership(
                PostgresMemberRow(user: membership.user, container: membership.container, role: membership.role))
        }
    }

    public func removeMembership(user: String, container: String) async throws(SyncServerError) -> Bool {
        try await attempt {
            try await tables.removeMembership(user: user, container: container)
        }
    }

    public func memberships(container: String?) async throws(SyncServerError) -> [MembershipRecord] {
        try await attempt { try await tables.memberships(container: container) }
            .map { MembershipRecord(user: $0.user, container: $0.container, role: $0.role) }
    }

    public func roles(user: String) async throws(SyncServerError) -> [String: AccessRole] {
        try await attempt { try await tables.roles(user: user) }
    }

    // MARK: Enrolment codes

    public func insertEnrolment(digest: String, user: String, expires: Int64) async throws(SyncServerError) {
        try await attempt {
            try await tables.insertEnrolment(digest: digest, user: user, expires: expires)
        }
    }

    public func takeEnrolment(digest: String, at time: Int64) async throws(SyncServerError) -> String? {
        try await attempt { try await tables.takeEnrolment(digest: digest, at: time) }
    }
}

extension TokenRecord {
    init(_ row: PostgresTokenRow) {
        self.init(
            id: row.id, user: row.user, device: row.device, containers: row.containers, role: row.role,
            label: row.label, created: row.created, expires: row.expires, revoked: row.revoked,
            lastUsed: row.lastUsed, lastAddress: row.lastAddress)
    }
}

extension PostgresTokenRow {
    init(_ record: TokenRecord) {
        self.init(
            id: record.id, user: record.user, device: record.device, containers: record.containers,
            role: record.role, label: record.label, created: record.created, expires: record.expires,
            revoked: record.revoked, lastUsed: record.lastUsed, lastAddress: record.lastAddress)
    }
}

extension UserRecord {
    init(_ row: PostgresUserRow) {
        self.init(
            name: row.name, passwordHash: row.passwordHash, totpSecret: row.totpSecret,
            totpLastStep: row.totpLastStep, created: row.created, disabled: row.disabled)
    }
}

extension PostgresUserRow {
    init(_ record: UserRecord) {
        self.init(
            name: record.name, passwordHash: record.passwordHash, totpSecret: record.totpSecret,
            totpLastStep: record.totpLastStep, created: record.created, disabled: record.disabled)
    }
}

extension DeviceRecord {
    init(_ row: PostgresDeviceRow) {
        self.init(id: row.id, user: row.user, name: row.name, created: row.created, revoked: row.revoked)
    }
}

extension PostgresDeviceRow {
    init(_ record: DeviceRecord) {
        self.init(id: record.id, user: record.user, name: record.name, created: record.created, revoked: record.revoked)
    }
}
