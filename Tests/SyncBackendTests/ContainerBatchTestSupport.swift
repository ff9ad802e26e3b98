import Foundation
import PostgresNIO
import SQLiteSupport
import Testing

@testable import SyncBackend
@testable import SyncPostgres

extension ContainerKind {
    /// The kinds that implement batches themselves: the in-memory, local and PostgreSQL
    /// containers, and both through `serve` (the client sends a batch whole to the server).
    static let batching: [ContainerKind] = [.inMemory, .local, .postgres, .postgresS3, .http, .httpPostgresS3]
    /// Those whose storage a test can make fail part-way through a batch (`StorageFailure`).
    static let failingStorage: [ContainerKind] = [.local, .postgres, .postgresS3]
}

/// Makes a container's own storage fail while it writes an entry named `StorageFailure.name`: a
/// trigger in its database (SQLite or PostgreSQL) that raises an error on the insert of that
/// row, inside the commit's transaction, as a full disk or a lost connection would.
///
/// The PostgreSQL stores of the tests have it from the start (`SharedPostgresStore`): DDL on the
/// shared table while tests run would make their commits queue behind its lock. No other test
/// uses that name.
enum StorageFailure {
    static let name = "syncfs-test-storage-failure"
    private static var hex: String { Array(name.utf8).map { String(format: "%02x", $0) }.joined() }

    /// Installs the failure in `container`'s database (idempotent).
    static func install(in container: any Container) async throws {
        if let local = container as? LocalContainer {
            try local.entries.withConnection { connection in
                try connection.execute(
                    """
                    CREATE TRIGGER IF NOT EXISTS test_storage_failure BEFORE INSERT ON entries
                    WHEN NEW.name = X'\(hex)' BEGIN SELECT RAISE(ABORT, 'injected storage failure'); END
                    """)
            }
            return
        }
        guard container is PostgresContainer else {
            throw TestSetupFailure("no storage failure for \(type(of: container))")
        }
    }

    /// Installs the failure in the database of `store`, for every container of it.
    static func install(in store: PostgresStore) async throws {
        try await store.run("install a storage failure") { client in
            _ = try await client.query(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE FUNCTION syncfs_test_storage_failure() RETURNS trigger LANGUAGE plpgsql
                        AS $$ BEGIN RAISE EXCEPTION 'injected storage failure'; END $$
                        """))
            _ = try await client.query(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE TRIGGER syncfs_test_storage_failure BEFORE INSERT ON syncfs_entries
                        FOR EACH ROW WHEN (NEW.name = '\\x\(hex)'::bytea)
                        EXECUTE FUNCTION syncfs_test_storage_failure()
                        """))
        }
    }
}

/// Request builders for batch tests.
func putRequest(_ id: FileID, base: EntryVersion = 0, _ state: EntryState) -> CommitRequest {
    CommitRequest(id: id, baseVersion: base, change: .put(state), device: "device-a")
}

func deleteRequest(_ id: FileID, base: EntryVersion) -> CommitRequest {
    CommitRequest(id: id, baseVersion: base, change: .delete, device: "device-a")
}

extension Container {
    /// Every entry of the feed, in feed order.
    func wholeFeed() async throws -> [RemoteEntry] {
        var cursor = FeedCursor.beginning
        var entries: [RemoteEntry] = []
        while true {
            let batch = try await changes(after: cursor, limit: 1_000)
            entries += batch.entries
            cursor = batch.cursor
            if !batch.moreComing { return entries }
        }
    }

    /// The newest version of the feed (0 if empty).
    func newestVersion() async throws -> EntryVersion {
        try await wholeFeed().map(\.version).max() ?? 0
    }
}

extension CommitOutcome {
    var committedEntry: RemoteEntry? {
        if case .committed(let entry) = self { return entry }
        return nil
    }
}
