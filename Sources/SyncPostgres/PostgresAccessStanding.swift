import PostgresNIO
import SyncBackend

/// A token with its user, device and the user's memberships, as one statement reads them.
public struct PostgresTokenStanding: Sendable, Equatable {
    public var token: PostgresTokenRow
    public var user: PostgresUserRow?
    public var device: PostgresDeviceRow?
    public var roles: [String: AccessRole]
}

extension PostgresAccessTables {
    /// The token with this digest and every row its grant depends on, in one round trip (every
    /// request of a token reads this); nil if there is no such token.
    public func standing(digest: String) async throws(ContainerProtocolError) -> PostgresTokenStanding? {
        try await store.run("look up a token") { client in
            let rows = try await client.query(
                """
                SELECT t.id, t.user_name, t.device_id, t.containers, t.role, t.label, t.created, t.expires, t.revoked,
                    t.last_used, t.last_address,
                    u.name, u.password_hash, u.totp_secret, u.totp_last_step, u.created, u.disabled,
                    d.id, d.user_name, d.name, d.created, d.revoked,
                    ARRAY(SELECT m.container FROM syncfs_members m WHERE m.user_name = t.user_name ORDER BY m.container),
                    ARRAY(SELECT m.role FROM syncfs_members m WHERE m.user_name = t.user_name ORDER BY m.container)
                FROM syncfs_tokens t
                LEFT JOIN syncfs_users u ON u.name = t.user_name
                LEFT JOIN syncfs_devices d ON d.id = t.device_id
                WHERE t.digest = \(digest)
                """)
            for try await row in rows {
                return try Self.standing(row)
            }
            return nil
        }
    }

    private static func standing(_ row: PostgresRow) throws -> PostgresTokenStanding {
        let (id, user, device, containers, role, label, created, expires, revoked, lastUsed, address) = try row.decode(
            (String, String?, String?, [String], String, String, Int64, Int64?, Int64?, Int64?, String?).self)
        let token = PostgresTokenRow(
            id: id, user: user, device: device, containers: containers.sorted(), role: try Self.role(role),
            label: label, created: created, expires: expires, revoked: revoked, lastUsed: lastUsed,
            lastAddress: address)
        let columns = row.makeRandomAccess()
        var account: PostgresUserRow?
        if let name = try columns[11].decode(String?.self) {
            account = PostgresUserRow(
                name: name, passwordHash: try columns[12].decode(String?.self),
                totpSecret: try columns[13].decode(String?.self), totpLastStep: try columns[14].decode(Int64?.self),
                created: try columns[15].decode(Int64.self), disabled: try columns[16].decode(Int64?.self))
        }
        var machine: PostgresDeviceRow?
        if let deviceID = try columns[17].decode(String?.self) {
            machine = PostgresDeviceRow(
                id: deviceID, user: try columns[18].decode(String.self), name: try columns[19].decode(String.self),
                created: try columns[20].decode(Int64.self), revoked: try columns[21].decode(Int64?.self))
        }
        let memberContainers = try columns[22].decode([String].self)
        let memberRoles = try columns[23].decode([String].self)
        var roles: [String: AccessRole] = [:]
        for (container, text) in zip(memberContainers, memberRoles) { roles[container] = try Self.role(text) }
        return PostgresTokenStanding(token: token, user: account, device: machine, roles: roles)
    }
}
