import Foundation
import SyncBackend
import SyncPostgres
import SyncServer
import SyncServerPostgres

/// The tokens of a PostgreSQL store (`syncfs_tokens`), for `serve --database` and
/// `token … --database URL`: the same format and semantics as the embedded token database
/// (`TokenFormat`; only digests are stored, one container per token, revoked tokens stay listed).
struct DatabaseTokens {
    let tokens: PostgresTokens

    init(store: PostgresStore) {
        self.tokens = PostgresTokens(store: store)
    }

    /// Makes a token for `container` (which must be a valid name); its public ID and the token.
    func create(container: String, label: String) throws(BackendFailure) -> (id: String, token: String) {
        let token = TokenFormat.newToken()
        let digest = TokenFormat.digest(of: token)
        let created = Int64(Date().timeIntervalSince1970)
        for _ in 0..<16 {
            let id = TokenFormat.newID()
            let inserted = try wait("record the token") { [tokens] () async throws(ContainerProtocolError) in
                try await tokens.insert(id: id, digest: digest, container: container, label: label, created: created)
            }
            if inserted { return (id, token) }
        }
        throw BackendFailure(.failure, "cannot find a free token ID")
    }

    func list() throws(BackendFailure) -> [TokenStore.Record] {
        try wait("list the tokens") { [tokens] () async throws(ContainerProtocolError) in try await tokens.list() }
            .map {
                TokenStore.Record(
                    id: $0.id, container: $0.container, label: $0.label, created: $0.created, revoked: $0.revoked)
            }
    }

    /// True if revoked now, false if it was revoked already; `badInput` for an unknown ID.
    func revoke(id: String) throws(BackendFailure) -> Bool {
        guard TokenFormat.isWellFormedID(id) else {
            throw BackendFailure(.badInput, "no token with ID '\(id)' (see `token list`)")
        }
        let now = Int64(Date().timeIntervalSince1970)
        let outcome = try wait("revoke the token") { [tokens] () async throws(ContainerProtocolError) in
            try await tokens.revoke(id: id, at: now)
        }
        guard let outcome else { throw BackendFailure(.badInput, "no token with ID '\(id)' (see `token list`)") }
        return outcome
    }

    private func wait<T: Sendable>(
        _ what: String, _ work: @escaping @Sendable () async throws(ContainerProtocolError) -> T
    ) throws(BackendFailure) -> T {
        let result = blockOn { () async -> Result<T, ContainerProtocolError> in
            do throws(ContainerProtocolError) { return .success(try await work()) } catch { return .failure(error) }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error):
            throw BackendFailure(error.isRetryable ? .temporaryFailure : .failure, "cannot \(what): \(error)")
        }
    }
}

/// `token create|list|revoke --database URL`: opens the store (no chunk store needed), runs
/// `body` with its tokens, shuts it down.
func withDatabaseTokens<T>(_ url: String, _ body: (DatabaseTokens, PostgresStore) throws(BackendFailure) -> T)
    throws(BackendFailure) -> T
{
    let opened = try DatabaseBackend.open(try DatabaseBackend.settings(url), chunkStore: nil)
    defer { opened.shutdown() }
    return try body(DatabaseTokens(store: opened.store), opened.store)
}

extension TokenCommand.Create {
    /// `token create --database URL --container NAME`: makes the container in the database if it
    /// is missing (nothing is made on the local disk) and a token for it, printed once.
    func createInDatabase(_ url: String) throws {
        let container = container.first ?? ""
        do throws(BackendFailure) {
            let (id, token) = try withDatabaseTokens(url) { tokens, store throws(BackendFailure) in
                if try DatabaseBackend.ensureContainer(container, in: store) {
                    printError("container '\(container)' created")
                }
                return try tokens.create(container: container, label: label)
            }
            print(token)
            printError("token \(id) for container '\(container)' created; it is shown only this once")
        } catch {
            throw fail(error)
        }
    }
}

extension TokenCommand.Revoke {
    /// `token revoke --database URL ID`.
    func revokeInDatabase(_ url: String) throws {
        do throws(BackendFailure) {
            let revoked = try withDatabaseTokens(url) { tokens, _ throws(BackendFailure) in try tokens.revoke(id: id) }
            printError(revoked ? "token \(id) revoked" : "token \(id) was already revoked")
        } catch {
            throw fail(error)
        }
    }
}

/// `user|member|device|token|link|audit … --database URL`: opens the store (no chunk store
/// needed), runs `body` with its access tables, shuts it down.
func withDatabaseAccess<T>(_ url: String, _ body: (any AccessStore) throws(BackendFailure) -> T)
    throws(BackendFailure) -> T
{
    let opened = try DatabaseBackend.open(try DatabaseBackend.settings(url), chunkStore: nil)
    defer { opened.shutdown() }
    return try body(PostgresAccess(store: opened.store))
}
