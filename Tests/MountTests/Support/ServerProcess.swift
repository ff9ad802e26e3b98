import Foundation
import Glibc
import TestSupport
import Testing

/// A `syncfs-mount serve` child process of the built binary on 127.0.0.1, serving the containers
/// under `root`, for mount tests that sync through the HTTP server.
///
///     let server = try ServerProcess.start(root: base + "/server")
///     defer { server.stop() }
///     let token = try server.createToken(container: "box")   // a file path holding the token
///     // mount server.url("box") with ["--token-file", token]
///
/// `stop` (SIGTERM, then SIGKILL after 10 s) is safe to call twice; `restart` starts a new server
/// on the same port (the mounts reconnect to it).
final class ServerProcess: @unchecked Sendable {
    /// The embedded server's root (with `database`, only where the log and token files go).
    let root: String
    /// With the PostgreSQL + S3 backend: the scratch database and bucket it serves (then `serve
    /// --database … --chunk-store s3://…`, tokens in the database), torn down by `tearDown`.
    let database: DatabaseBackendFixture?
    private(set) var port: Int
    private(set) var pid: pid_t?
    let logPath: String
    /// With TLS: the certificate (also the CA file a client trusts) and key, PEM.
    let tls: (certificate: String, key: String)?
    /// The write end of the server's standard input (`serve --lifeline`): if this test process
    /// dies, the server sees end-of-file and stops.
    private var lifeline: Int32?
    /// More `serve` options (e.g. `--quota box=64K`), used by `start` and every `restart`.
    var serveArguments: [String]

    private init(
        root: String, port: Int, launched: Launched, logPath: String, tls: (certificate: String, key: String)?,
        database: DatabaseBackendFixture?, serveArguments: [String]
    ) {
        self.serveArguments = serveArguments
        self.root = root
        self.database = database
        self.port = port
        self.pid = launched.pid
        self.lifeline = launched.lifeline
        self.logPath = logPath
        self.tls = tls
    }

    private struct Launched {
        let pid: pid_t
        let port: Int
        let lifeline: Int32
    }

    /// Starts a server on `port` (0: any free port) and waits for its `listening on` line.
    /// `tls`: serve HTTPS with a fresh self-signed certificate for 127.0.0.1 (`openssl`).
    /// `certificateNames`: the certificate's subjectAltName (another name tests a host name
    /// mismatch).
    /// `backend`: `.postgresS3` serves a fresh scratch database and bucket (`DatabaseBackendFixture`,
    /// schema made by `server-init`) instead of `root`; `tearDown` removes them.
    static func start(
        root: String, port: Int = 0, tls: Bool = false, certificateNames: String = "DNS:localhost,IP:127.0.0.1",
        backend: MountServerBackend = .embedded, serveArguments: [String] = []
    ) throws -> ServerProcess {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var database: DatabaseBackendFixture?
        if backend == .postgresS3 {
            let made = try DatabaseBackendFixture.make()
            made.tokensInDatabase = true
            database = made
        }
        do {
            try database?.prepare()
            let logPath = root + "/../server.log"
            let files = tls ? try makeCertificate(in: root + "/..", names: certificateNames) : nil
            let launched = try launch(
                backend: database?.backendArguments ?? ["--root", root], port: port, logPath: logPath, tls: files,
                serveArguments: serveArguments)
            return ServerProcess(
                root: root, port: launched.port, launched: launched, logPath: logPath, tls: files, database: database,
                serveArguments: serveArguments)
        } catch {
            database?.tearDown()
            throw error
        }
    }

    /// Stops the server and removes its database and bucket, if any.
    func tearDown() {
        stop()
        database?.tearDown()
    }

    /// `http(s)://127.0.0.1:PORT/NAME`.
    func url(_ container: String) -> String { "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)/\(container)" }

    /// A self-signed certificate for 127.0.0.1 and its key, in `directory`.
    private static func makeCertificate(in directory: String, names: String) throws -> (
        certificate: String, key: String
    ) {
        let files = (certificate: directory + "/server.crt", key: directory + "/server.key")
        let result = ModelProcess.run(
            [
                "/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=" + names, "-days", "1", "-keyout", files.key, "-out",
                files.certificate,
            ], timeout: 60)
        guard result.ok else { throw TestFolderError(message: "openssl req failed (is openssl installed?): \(result)") }
        return files
    }

    /// Runs `token create` for `container` (creating it) and returns the path of a file (mode
    /// 0600) holding the token.
    func createToken(container: String, label: String = "test") throws -> String {
        let location = database.map { ["--database", $0.databaseURL] } ?? ["--root", root]
        let result = ModelProcess.run(
            [try TestFolder.binaryPath(), "token", "create"] + location + ["--container", container, "--label", label],
            timeout: 60)
        guard result.ok else { throw TestFolderError(message: "token create failed: \(result)") }
        let token = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.hasPrefix("sfs_") else {
            throw TestFolderError(message: "token create printed no token: \(result)")
        }
        let path = root + "/../token-\(container)-\(label)"
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw TestFolderError(message: "cannot write \(path)") }
        return path
    }

    /// Stops the server gracefully (SIGTERM), killing it if it has not exited after 10 s.
    /// Returns the exit status (nil if it had to be killed or was not running).
    @discardableResult
    func stop() -> Int32? {
        guard let pid else { return nil }
        self.pid = nil
        closeLifeline()
        kill(pid, SIGCONT)  // a suspended server handles SIGTERM only once it runs again
        kill(pid, SIGTERM)
        if let status = TestFolder.waitForExit(pid, timeout: 10) { return status }
        kill(pid, SIGKILL)
        _ = TestFolder.waitForExit(pid, timeout: 10)
        Issue.record("the server \(pid) did not stop within 10 s of SIGTERM; killed it")
        return nil
    }

    /// SIGSTOP: the server hangs — it keeps its listening socket, so the kernel still accepts
    /// connections and takes requests, but nothing answers (a hung machine or process). `resume`
    /// (and `stop`, which resumes first) ends it.
    func suspend() {
        if let pid { kill(pid, SIGSTOP) }
    }

    /// SIGCONT: a suspended server answers again.
    func resume() {
        if let pid { kill(pid, SIGCONT) }
    }

    /// SIGKILL: the server dies at once, whatever it was doing (a crash or power cut).
    func kill9() {
        guard let pid else { return }
        self.pid = nil
        kill(pid, SIGKILL)
        closeLifeline()
        _ = TestFolder.waitForExit(pid, timeout: 10)
    }

    /// Stops the server and starts a new one on the same port.
    func restart() throws {
        stop()
        let deadline = Date().addingTimeInterval(15)
        while true {
            do {
                let launched = try Self.launch(
                    backend: database?.backendArguments ?? ["--root", root], port: port, logPath: logPath, tls: tls,
                    serveArguments: serveArguments)
                (pid, port, lifeline) = (launched.pid, launched.port, launched.lifeline)
                return
            } catch  where Date() < deadline {
                usleep(200_000)  // the port may still be held for a moment
            }
        }
    }

    /// Closes the lifeline only (as a dying test runner would) and waits up to 10 s for the
    /// server to exit; returns its exit status, or nil if it is still running (then stopped).
    func dropLifeline() -> Int32? {
        guard let pid else { return nil }
        closeLifeline()
        if let status = TestFolder.waitForExit(pid, timeout: 10) {
            self.pid = nil
            return status
        }
        stop()
        return nil
    }

    private func closeLifeline() {
        if let lifeline { close(lifeline) }
        lifeline = nil
    }

    /// The server log's last lines, for failure messages.
    func log(limit: Int = 3000) -> String { TestFolder.tail(of: logPath, limit: limit) }

    deinit { stop() }

    private static func launch(
        backend: [String], port: Int, logPath: String, tls: (certificate: String, key: String)?,
        serveArguments: [String]
    ) throws -> Launched {
        let extra = (tls.map { ["--tls-cert", $0.certificate, "--tls-key", $0.key] } ?? []) + serveArguments
        let launched: ServeLauncher.Launched
        do {
            launched = try ServeLauncher.launch(
                backend: backend, port: port, extra: extra, lifeline: true, logPath: logPath)
        } catch {
            throw TestFolderError(message: "\(error)")
        }
        return Launched(pid: launched.pid, port: launched.port, lifeline: launched.lifeline ?? -1)
    }
}
