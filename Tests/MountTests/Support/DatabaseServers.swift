import Foundation
import Glibc
import TestSupport
import Testing

/// `syncfs-mount serve --database … --chunk-store s3://…` processes on a scratch PostgreSQL
/// database and a scratch RGW bucket (the services `scripts/services.sh` starts; their
/// environment is `SYNCFS_TEST_PG_URL` and `SYNCFS_TEST_S3_*`). Without that environment the
/// tests that need it FAIL, saying so: they never skip.
///
///     let backend = try DatabaseBackendFixture.make()      // a database and a bucket of its own
///     defer { backend.tearDown() }
///     let token = try backend.initialize(container: "box")  // server-init: schema, container, token
///     let server = try backend.startServer()               // one serve process; start more at will
///
/// The S3 keys reach the processes as `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` in this test
/// process's environment, never on a command line.
final class DatabaseBackendFixture: @unchecked Sendable {
    let baseDir: String
    /// The scratch database's URL (no password: the test cluster trusts local connections).
    let databaseURL: String
    let chunkStore: String
    let tokensDir: String
    /// Tokens in the database (`server-init --token`, `serve` without `--tokens`) rather than in
    /// the token directory `tokensDir`.
    var tokensInDatabase = false
    private let adminURL: String
    private let databaseName: String
    /// The scratch bucket and the services' S3 endpoint, region and keys (for `removeBucket`).
    private var bucket = ""
    private var s3: ServicesEnvironment?
    private var servers: [(pid: pid_t, lifeline: Int32?)] = []

    struct Server {
        let pid: pid_t
        let port: Int
        func url(_ container: String) -> String { "http://127.0.0.1:\(port)/\(container)" }
    }

    private init(baseDir: String, adminURL: String, databaseName: String, chunkStore: String) {
        self.baseDir = baseDir
        self.adminURL = adminURL
        self.databaseName = databaseName
        let server = adminURL.range(of: "/", options: .backwards).map { String(adminURL[..<$0.lowerBound]) }
        self.databaseURL = (server ?? adminURL) + "/" + databaseName
        self.chunkStore = chunkStore
        self.tokensDir = baseDir + "/tokens"
    }

    /// The services' environment, or a failure naming what is missing (`ServicesEnvironment`).
    static func environment() throws -> ServicesEnvironment {
        do {
            return try ServicesEnvironment.require(.postgres, .s3)
        } catch {
            throw TestFolderError(message: error.description)
        }
    }

    /// A fresh database (not initialised) and the URL of a fresh bucket (not made yet).
    static func make() throws -> DatabaseBackendFixture {
        let environment = try environment()
        setenv("AWS_ACCESS_KEY_ID", environment.s3AccessKeyID, 1)
        setenv("AWS_SECRET_ACCESS_KEY", environment.s3SecretAccessKey, 1)
        let base = try makeTemporaryDirectory("syncfs-tests")
        let suffix = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let bucket = "syncfs-mount-\(suffix)"
        let store =
            "s3://\(bucket)/prefix?endpoint=\(environment.s3Endpoint)&region=\(environment.s3Region)"
        let fixture = DatabaseBackendFixture(
            baseDir: base, adminURL: environment.postgresURL,
            databaseName: "syncfs_mount_\(suffix)", chunkStore: store)
        fixture.bucket = bucket
        fixture.s3 = environment
        try fixture.psql("CREATE DATABASE \(fixture.databaseName)")
        return fixture
    }

    /// Runs SQL as the services' administrator.
    func psql(_ sql: String) throws {
        let result = ModelProcess.run(["psql", adminURL, "-v", "ON_ERROR_STOP=1", "-qc", sql], timeout: 60)
        guard result.ok else { throw TestFolderError(message: "psql failed: \(result)") }
    }

    /// The one value `sql` selects in the scratch database.
    func value(_ sql: String) throws -> String {
        let result = ModelProcess.run(["psql", databaseURL, "-v", "ON_ERROR_STOP=1", "-tAc", sql], timeout: 60)
        guard result.ok else { throw TestFolderError(message: "psql failed: \(result)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `syncfs-mount ARGS` with this test's environment, plus `env`.
    func syncfs(_ arguments: [String], env: [String: String] = [:], timeout: Double = 120) throws -> ModelProcessResult
    {
        ModelProcess.run([try TestFolder.binaryPath()] + arguments, env: env, timeout: timeout)
    }

    /// `syncfs-bench ARGS` (the benchmarks' commands, e.g. `seed-container`).
    func bench(_ arguments: [String], timeout: Double = 120) throws -> ModelProcessResult {
        ModelProcess.run([try TestFolder.benchBinaryPath()] + arguments, timeout: timeout)
    }

    /// `server-init` with `--create container --tokens`: returns the path of a file (0600)
    /// holding the token it printed.
    func initialize(container: String) throws -> String {
        let result = try syncfs(
            ["server-init", "--database", databaseURL, "--chunk-store", chunkStore, "--create", container]
                + (tokensInDatabase ? ["--token"] : ["--tokens", tokensDir]))
        let token = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.ok, token.hasPrefix("sfs_") else {
            throw TestFolderError(message: "server-init failed: \(result)")
        }
        let path = baseDir + "/token-\(container)"
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw TestFolderError(message: "cannot write \(path)") }
        return path
    }

    /// `server-init` without a container: the schema and the bucket, nothing else.
    func prepare() throws {
        let result = try syncfs(["server-init", "--database", databaseURL, "--chunk-store", chunkStore])
        guard result.ok else { throw TestFolderError(message: "server-init failed: \(result)") }
    }

    /// The `serve` arguments naming this backend.
    var backendArguments: [String] {
        ["--database", databaseURL, "--chunk-store", chunkStore] + (tokensInDatabase ? [] : ["--tokens", tokensDir])
    }

    /// Starts one more `serve` process on this database and bucket (on `port`, e.g. a killed
    /// one's, or any free port).
    func startServer(port: Int = 0) throws -> Server {
        let index = servers.count
        let launched: ServeLauncher.Launched
        do {
            launched = try ServeLauncher.launch(
                backend: backendArguments, port: port, lifeline: true, logPath: baseDir + "/server-\(index).log")
        } catch {
            throw TestFolderError(message: "\(error)")
        }
        servers.append((launched.pid, launched.lifeline))
        return Server(pid: launched.pid, port: launched.port)
    }

    /// `token create --database` for `container` (made in the database if missing): the token.
    func createToken(container: String, label: String = "") throws -> String {
        let result = try syncfs(
            ["token", "create", "--database", databaseURL, "--container", container, "--label", label])
        let token = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.ok, token.hasPrefix("sfs_") else {
            throw TestFolderError(message: "token create failed: \(result)")
        }
        return token
    }

    /// The servers' logs, for failure messages.
    func logs(limit: Int = 3000) -> String {
        (0..<servers.count).map {
            "---- server \($0) log:\n" + TestFolder.tail(of: baseDir + "/server-\($0).log", limit: limit)
        }
        .joined(separator: "\n")
    }

    /// Deletes the scratch bucket and every object in it, if the test made it (best effort:
    /// through `curl --aws-sigv4`, the keys in a private config file, never on a command line),
    /// so the throwaway RGW does not accumulate buckets run after run.
    func removeBucket() {
        guard !bucket.isEmpty, let (endpoint, config) = curlConfig() else { return }
        defer { unlink(config) }
        let bucketURL = endpoint + "/" + bucket
        for _ in 0..<100 {
            let listed = ModelProcess.run(["curl", "-K", config, bucketURL + "?list-type=2"], timeout: 60)
            let keys = listed.stdout.components(separatedBy: "<Key>").dropFirst().compactMap {
                $0.components(separatedBy: "</Key>").first
            }
            if keys.isEmpty { break }
            for key in keys {
                let path = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? key
                _ = ModelProcess.run(["curl", "-K", config, "-X", "DELETE", bucketURL + "/" + path], timeout: 60)
            }
        }
        _ = ModelProcess.run(["curl", "-K", config, "-X", "DELETE", bucketURL], timeout: 60)
    }

    /// Every object in the scratch bucket, downloaded into `directory` (one file each), for a scan
    /// of what the bucket holds; returns how many there were.
    func downloadBucket(into directory: String) throws -> Int {
        guard !bucket.isEmpty, let (endpoint, config) = curlConfig() else {
            throw TestFolderError(message: "no scratch bucket to download")
        }
        defer { unlink(config) }
        let bucketURL = endpoint + "/" + bucket
        var count = 0
        var token: String?
        repeat {
            let query =
                "?list-type=2"
                + (token.map {
                    "&continuation-token=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)
                } ?? "")
            let listed = ModelProcess.run(["curl", "-K", config, bucketURL + query], timeout: 60)
            guard listed.ok else { throw TestFolderError(message: "cannot list the bucket: \(listed)") }
            let keys = listed.stdout.components(separatedBy: "<Key>").dropFirst().compactMap {
                $0.components(separatedBy: "</Key>").first
            }
            for key in keys {
                let path = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? key
                count += 1
                let fetched = ModelProcess.run(
                    ["curl", "-K", config, "-f", "-o", directory + "/object-\(count)", bucketURL + "/" + path],
                    timeout: 60)
                guard fetched.ok else { throw TestFolderError(message: "cannot download \(key): \(fetched)") }
            }
            token =
                listed.stdout.components(separatedBy: "<NextContinuationToken>").dropFirst().first?
                .components(separatedBy: "</NextContinuationToken>").first
        } while token != nil
        return count
    }

    /// Whether the scratch bucket exists (for the test of `removeBucket`).
    func bucketExists() -> Bool {
        guard let (endpoint, config) = curlConfig() else { return false }
        defer { unlink(config) }
        let result = ModelProcess.run(
            ["curl", "-K", config, "-o", "/dev/null", "-w", "%{http_code}", endpoint + "/" + bucket + "?list-type=2"],
            timeout: 60)
        return result.stdout == "200"
    }

    /// The S3 endpoint and a private curl config file (0600) with the keys and SigV4 signing;
    /// the caller unlinks it.
    private func curlConfig() -> (endpoint: String, path: String)? {
        guard let s3 else { return nil }
        let (endpoint, region, key, secret) = (s3.s3Endpoint, s3.s3Region, s3.s3AccessKeyID, s3.s3SecretAccessKey)
        let path = baseDir + "/s3-curl-\(UUID().uuidString).conf"
        // S3 wants the body's SHA-256 signed; every request here has an empty body.
        let emptyBody = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        let text =
            "user = \"\(key):\(secret)\"\naws-sigv4 = \"aws:amz:\(region):s3\"\n"
            + "header = \"x-amz-content-sha256: \(emptyBody)\"\nsilent\nmax-time = 30\n"
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { return nil }
        return (endpoint, path)
    }

    /// Stops every server, drops the database, deletes the scratch bucket, removes the files.
    func tearDown() {
        for server in servers {
            if let lifeline = server.lifeline { close(lifeline) }
            kill(server.pid, SIGTERM)
            if TestFolder.waitForExit(server.pid, timeout: 10) == nil {
                kill(server.pid, SIGKILL)
                _ = TestFolder.waitForExit(server.pid, timeout: 10)
            }
        }
        servers = []
        try? psql("DROP DATABASE IF EXISTS \(databaseName) WITH (FORCE)")
        removeBucket()
        try? FileManager.default.removeItem(atPath: baseDir)
    }
}
