import Foundation
import PostgresNIO
import SyncPostgres

/// A throwaway database for tests: made on the server of `SYNCFS_TEST_PG_URL` (the services of
/// `scripts/services.sh`) under a random name `syncfs_t_<hex>`, dropped by `drop()`.
///
/// Without `SYNCFS_TEST_PG_URL`, `create()` throws `MissingService` saying how to start the
/// services: a test that needs PostgreSQL fails, it never skips.
public struct PostgresScratchDatabase: Sendable {
    /// The URL of the new database (the server's URL with its path replaced).
    public let url: String
    public let name: String
    let adminURL: String

    public struct MissingService: Error, CustomStringConvertible {
        public let description =
            "SYNCFS_TEST_PG_URL is not set: these tests need PostgreSQL; run them through scripts/test.sh, "
            + "or eval \"$(scripts/services.sh start)\" first"
    }

    /// The server URL tests use, or `MissingService`.
    public static func serverURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["SYNCFS_TEST_PG_URL"], !url.isEmpty else {
            throw MissingService()
        }
        return url
    }

    /// Creates an empty database on the test server.
    public static func create() async throws -> PostgresScratchDatabase {
        let adminURL = try serverURL()
        let name = "syncfs_t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        guard var components = URLComponents(string: adminURL) else { throw PostgresSettingsError("bad test URL") }
        components.path = "/" + name
        guard let url = components.string else { throw PostgresSettingsError("bad test URL") }
        // The name is ours (hex), so it may be spliced into the statement; identifiers cannot be bound.
        try await withAdmin(adminURL) { client in
            _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        return PostgresScratchDatabase(url: url, name: String(name), adminURL: adminURL)
    }

    /// Drops the database, closing its other sessions first.
    public func drop() async throws {
        try await Self.withAdmin(adminURL) { [name] client in
            _ = try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        }
    }

    /// Runs `body` with a client on `url`'s database.
    public static func withAdmin<T: Sendable>(
        _ url: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let client = PostgresClient(configuration: try PostgresSettings(url: url).clientConfiguration())
        let running = Task { await client.run() }
        defer { running.cancel() }
        return try await withTimeout(.seconds(30)) { try await body(client) }
    }
}
