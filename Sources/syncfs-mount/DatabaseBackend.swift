import ArgumentParser
import Dispatch
import Foundation
import SyncBackend
import SyncPostgres
import SyncS3
import SyncServer
import SyncServerPostgres
import Synchronization

/// `serve --database URL --chunk-store LOCATION` and `server-init`: containers in PostgreSQL
/// (`PostgresStore`), chunk bytes in an S3 bucket (`s3://…`, `S3ChunkBlobStore`) or a local
/// directory (`LocalChunkBlobStore`).
///
/// Contract:
/// - Credentials never come from the command line: a database URL with a password, or an
///   `s3://` URL with user info or a key-like parameter, is refused (`usage`) before anything
///   is contacted. Passwords come from `PGPASSWORD`/`PGPASSFILE`/`~/.pgpass`, S3 keys from
///   `AWS_*` or the credentials file. No message printed here holds a secret
///   (`PostgresSettings.description` and the S3 errors are redacted by construction).
/// - Opening checks everything before the server binds: the schema (`notInitialized` names
///   `server-init`, exit 65), and the chunk store (a bucket that cannot be reached is exit 75;
///   nothing is created in it).
enum DatabaseBackend {
    /// The opened store with what must be shut down with it.
    struct Opened: Sendable {
        let store: PostgresStore
        let http: HTTPClientBox?

        func shutdown() {
            blockOn { await store.shutdown() }
            http?.shutdown()
        }
    }

    /// The database settings of `url`; `usage` if the URL holds a password or cannot be parsed.
    static func settings(_ url: String) throws(BackendFailure) -> PostgresSettings {
        if let components = URLComponents(string: url), components.password != nil {
            throw BackendFailure(
                .usage,
                "the database URL must not hold a password: use PGPASSWORD, PGPASSFILE or ~/.pgpass")
        }
        do {
            return try PostgresSettings(url: url)
        } catch {
            throw BackendFailure(.usage, "--database: \(error.description)")
        }
    }

    /// Creates or migrates the schema (`server-init`).
    static func initialize(_ settings: PostgresSettings) throws(BackendFailure) {
        let result = blockOn { () async -> PostgresStoreError? in
            do throws(PostgresStoreError) {
                try await PostgresStore.initialize(settings: settings)
                return nil
            } catch { return error }
        }
        if let result { throw failure(result) }
    }

    /// Opens the store on `settings` with chunks at `chunkStore` (an `s3://` URL or a directory,
    /// which must exist unless `createDirectory`; nil: a store that only manages containers).
    static func open(
        _ settings: PostgresSettings, chunkStore: String?, createDirectory: Bool = false
    ) throws(BackendFailure) -> Opened {
        var blobs: any ChunkBlobStore = NoChunkStore()
        var http: HTTPClientBox?
        if let chunkStore { (blobs, http) = try openBlobs(chunkStore, createDirectory: createDirectory) }
        let result = blockOn { [blobs] () async -> Result<PostgresStore, PostgresStoreError> in
            do throws(PostgresStoreError) {
                return .success(try await PostgresStore.open(settings: settings, blobs: blobs))
            } catch { return .failure(error) }
        }
        switch result {
        case .success(let store): return Opened(store: store, http: http)
        case .failure(let error):
            http?.shutdown()
            throw failure(error)
        }
    }

    /// Checks that the chunk store `location` answers (making a local directory if `create`).
    static func checkChunkStore(_ location: String, create: Bool) throws(BackendFailure) {
        let (_, http) = try openBlobs(location, createDirectory: create)
        http?.shutdown()
    }

    /// Makes the container `name` in `store` unless it exists; whether it made it.
    static func ensureContainer(_ name: String, in store: PostgresStore) throws(BackendFailure) -> Bool {
        let result = blockOn { () async -> Result<Bool, ContainerProtocolError> in
            do throws(ContainerProtocolError) {
                if try await store.container(named: name) != nil { return .success(false) }
                _ = try await store.createContainer(named: name)
                return .success(true)
            } catch {
                // Another process made it between the look-up and the insert.
                if case .invalidRequest = error { return .success(false) }
                return .failure(error)
            }
        }
        switch result {
        case .success(let made): return made
        case .failure(let error): throw BackendFailure(.temporaryFailure, "cannot make the container: \(error)")
        }
    }

    /// The chunk store `location` names, checked usable (for S3, a one-key list: it proves the
    /// endpoint answers, the bucket exists and the credentials sign). `createDirectory`: make the
    /// directory, or the bucket (`server-init`).
    private static func openBlobs(
        _ location: String, createDirectory: Bool
    ) throws(BackendFailure) -> (any ChunkBlobStore, HTTPClientBox?) {
        if let problem = LocationCheck.chunkStoreProblem(location) { throw BackendFailure(.usage, problem) }
        guard location.lowercased().hasPrefix("s3://") else {
            let path = absolutePath(location)
            do {
                return (
                    createDirectory
                        ? try LocalChunkBlobStore.create(at: path) : try LocalChunkBlobStore(at: path), nil
                )
            } catch {
                throw BackendFailure(
                    .badInput,
                    "--chunk-store \(path) is not a chunk directory (make it with server-init --chunk-store): \(error)"
                )
            }
        }
        let (transport, shutdown) = AsyncHTTPClientTransport.makeOwned()
        let http = HTTPClientBox(shutdown)
        let store: S3ChunkBlobStore
        do {
            store = try S3ChunkBlobStore.make(
                url: location, environment: ProcessInfo.processInfo.environment,
                transport: transport,
                retryPolicy: S3RetryPolicy())
        } catch let error as S3Location.ParseError {
            http.shutdown()
            throw BackendFailure(.usage, "--chunk-store: \(error.description)")
        } catch {
            http.shutdown()
            throw BackendFailure(.badInput, "--chunk-store: \(error)")
        }
        let probe = blockOn { () async -> S3Error? in
            do throws(S3Error) {
                if createDirectory {
                    do throws(S3Error) {
                        try await store.client.createBucket()
                    } catch .refused(_, let code) where code == "BucketAlreadyOwnedByYou" {
                        // Made before: fine.
                    }
                }
                // A list, not a HEAD: a HEAD in a missing bucket is a 404 like a missing key.
                _ = try await store.client.list(prefix: "chunks/", maxKeys: 1)
                return nil
            } catch { return error }
        }
        if let probe {
            http.shutdown()
            let status: ExitStatus
            if case .transient = probe { status = .temporaryFailure } else { status = .badInput }
            throw BackendFailure(status, "the chunk store \(store.client.location) cannot be used: \(probe)")
        }
        return (store, http)
    }

    private static func failure(_ error: PostgresStoreError) -> BackendFailure {
        switch error {
        case .unavailable:
            // The pool retries a refused login or a missing database silently until the deadline.
            return BackendFailure(
                .temporaryFailure,
                "\(error.description) (is the server up, does the database exist, may this user log in?)")
        case .notInitialized, .schemaTooOld:
            return BackendFailure(
                .badInput, "\(error.description); run `syncfs-mount server-init --database URL` first")
        case .schemaTooNew: return BackendFailure(.badInput, error.description)
        case .databaseMissing: return BackendFailure(.badInput, error.description)
        case .loginRefused: return BackendFailure(.permissionDenied, error.description)
        case .failed: return BackendFailure(.failure, error.description)
        }
    }
}

/// The chunk store of `server-init` without `--chunk-store`: it only manages containers.
private struct NoChunkStore: ChunkBlobStore {
    func put(_ chunk: EncodedChunk) async throws(ContainerProtocolError) { throw .unavailable("no chunk store") }
    func get(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        throw .unavailable("no chunk store")
    }
    func delete(_ hash: ChunkHash) async throws(ContainerProtocolError) { throw .unavailable("no chunk store") }
}

/// The HTTP client of the S3 transport, shut down once.
final class HTTPClientBox: Sendable {
    private let shutdownClient: @Sendable () -> Void
    private let done = Atomic<Bool>(false)

    init(_ shutdown: @escaping @Sendable () -> Void) { self.shutdownClient = shutdown }

    func shutdown() {
        guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdownClient()
    }
}

/// Runs `work` to its end from synchronous code (a command's `run`), on a task of its own.
func blockOn<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
    let result = Mutex<T?>(nil)
    let finished = DispatchSemaphore(value: 0)
    Task {
        let value = await work()
        result.withLock { $0 = value }
        finished.signal()
    }
    finished.wait()
    return result.withLock { $0! }
}

/// Why the database backend cannot be used, with the exit status `syncfs-mount` ends with.
struct BackendFailure: Error, CustomStringConvertible {
    let status: ExitStatus
    let description: String

    init(_ status: ExitStatus, _ description: String) {
        self.status = status
        self.description = description
    }
}

/// Prints `error` on standard error and exits with its status.
func fail(_ error: BackendFailure) -> ExitCode {
    printError("syncfs-mount: \(error.description)")
    return ExitCode(error.status)
}

/// `serve`'s choice of backend: `--root DIR` (the embedded default) or `--database URL` with
/// `--chunk-store LOCATION` (tokens in the database, or in `--tokens DIR` for setups made before
/// the database kept them); exactly one of `--root` and `--database`.
enum ServeBackendChoice {
    /// What is wrong with the combination (exit 64), or nil.
    static func problem(root: String?, database: String?, chunkStore: String?, tokens: String?) -> String? {
        switch (root, database) {
        case (nil, nil): return "give --root DIR (containers in a directory) or --database URL"
        case (_?, _?): return "--root and --database exclude each other: give one"
        case (_?, nil):
            if chunkStore != nil { return "--chunk-store goes with --database" }
            if tokens != nil { return "--tokens goes with --database (with --root the tokens are in ROOT)" }
            return nil
        case (nil, _?):
            if chunkStore == nil {
                return "--database needs --chunk-store (s3://BUCKET?endpoint=URL&region=R or a directory)"
            }
            return nil
        }
    }
}
