import Foundation
import Glibc
import TestSupport

/// `Support/lying_proxy.py` as a child process on 127.0.0.1: a proxy in front of a real `serve`
/// that forwards every request and lies in the change feed only (an injected empty file
/// `injectName` with ID `injectID` on every page, entries named `hideName` shown deleted; with
/// `lieAfter`, only once that file exists).
///
///     let liar = try LyingProxyProcess.start(upstreamPort: server.port, injectName: "x", hideName: "y")
///     defer { liar.stop() }
///     // mount "\(liar.url("box")),\(server.url("box"))"; liar.kill9() to make the mount fail over
final class LyingProxyProcess: @unchecked Sendable {
    let directory: String
    let port: Int
    let injectID: String
    private var pid: pid_t?

    func url(_ container: String) -> String { "http://127.0.0.1:\(port)/\(container)" }
    var logPath: String { directory + "/proxy.log" }

    private init(directory: String, port: Int, pid: pid_t, injectID: String) {
        self.directory = directory
        self.port = port
        self.pid = pid
        self.injectID = injectID
    }

    static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("lying_proxy.py").path
    }

    static func start(
        upstreamPort: Int, injectName: String, hideName: String,
        injectID: String = "11ed" + String(repeating: "0", count: 27) + "1", lieAfter: String? = nil
    ) throws -> LyingProxyProcess {
        let directory = try makeTemporaryDirectory("syncfs-liar")
        let log = open(directory + "/proxy.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            close(log)
            close(null)
        }
        let pid = try TestFolder.spawn(
            [
                try HostileServerProcess.python(), scriptPath, "--upstream-port", String(upstreamPort), "--port-file",
                directory + "/port", "--inject-id", injectID, "--inject-name", injectName, "--hide-name", hideName,
            ] + (lieAfter.map { ["--lie-after", $0] } ?? []), stdin: null, stdout: log, stderr: log)
        var port: Int?
        _ = waitUntil(timeout: 30) {
            port = (try? readText(directory + "/port")).flatMap { Int($0) }
            return port != nil || TestFolder.waitForExit(pid, timeout: 0) != nil
        }
        guard let port else {
            kill(pid, SIGKILL)
            _ = TestFolder.waitForExit(pid, timeout: 10)
            let text = TestFolder.tail(of: directory + "/proxy.log", limit: 4000)
            try? FileManager.default.removeItem(atPath: directory)
            throw TestFolderError(message: "the lying proxy did not start: \(text)")
        }
        return LyingProxyProcess(directory: directory, port: port, pid: pid, injectID: injectID)
    }

    func log() -> String { TestFolder.tail(of: logPath, limit: 4000) }

    /// SIGKILL: its connections are reset, as a server that died.
    func kill9() {
        guard let pid else { return }
        self.pid = nil
        kill(pid, SIGKILL)
        _ = TestFolder.waitForExit(pid, timeout: 10)
    }

    /// Kills it (if running) and removes its temporary directory.
    func stop() {
        kill9()
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }
}
