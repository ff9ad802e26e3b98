import Foundation
import SyncBackend
import SyncPostgres
import SyncServer
import SyncServerPostgres

/// `token create --database URL`'s store: opened without a chunk store, shut down after `body`.
func withDatabaseStore<T>(_ url: String, _ body: (PostgresStore) throws(BackendFailure) -> T)
    throws(BackendFailure) -> T
{
    let opened = try DatabaseBackend.open(try DatabaseBackend.settings(url), chunkStore: nil)
    defer { opened.shutdown() }
    return try body(opened.store)
}

extension TokenCommand.Create {
    /// `token create --database URL --container NAME`: makes the container in the database if it
    /// is missing (nothing is made on the local disk) and a token for it, printed once.
    func createInDatabase(_ url: String) throws {
        let container = container.first ?? ""
        do throws(BackendFailure) {
            let label = label
            let (id, token) = try withDatabaseStore(url) { store throws(BackendFailure) in
                if try DatabaseBackend.ensureContainer(container, in: store) {
                    printError("container '\(container)' created")
                }
                return try AccessPlaceOptions.run(AccountAdmin(store: PostgresAccess(store: store))) {
                    admin throws(SyncServerError) in
                    try await admin.createContainerToken(container: container, label: label)
                }
            }
            print(token)
            printError("token \(id) for container '\(container)' created; it is shown only this once")
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
