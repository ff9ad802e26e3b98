import Foundation
import Glibc
import TestSupport
import Testing

/// doc/METRICS.md kept true, and the JSON log lines (doc/CLI.md, "Logs and metrics"): the real
/// binary's `serve` and a mount through it, both with `--metrics-listen` and `--log-format json`,
/// a workload on the mount, then both scrapes and both logs checked.
@Suite(.serialized)
struct MetricsDocumentTest {
    /// The workload's names: none may appear anywhere in a scrape.
    private static let folderName = "ledger-folder-q9x"
    private static let reportName = "quarterly-report-7c1.txt"
    private static let photoName = "holiday-photo-k2m.bin"
    private static let renamedName = "renamed-photo-z5w.bin"

    /// The series a scrape must have besides those marked `always`: what the workload causes.
    private static let causedByWorkload = [
        "serve": [
            "syncfs_server_requests_total", "syncfs_server_request_duration_seconds",
            "syncfs_server_quota_used_bytes", "syncfs_server_quota_limit_bytes",
        ],
        "mount": ["syncfs_mount_fuse_operations_total", "syncfs_mount_fuse_operation_duration_seconds"],
    ]

    /// On the database backend the storage series appear too (PostgreSQL and S3 calls).
    @Test(arguments: MountServerBackend.allCases)
    func bothScrapesAreTheDocumentedSeriesAfterAWorkload(backend: MountServerBackend) throws {
        let documented = try DocumentedSeries.load()
        #expect(documented.sections["serve"]?.count ?? 0 >= 10 && documented.sections["mount"]?.count ?? 0 >= 10)
        let base = try makeTemporaryDirectory("syncfs-tests")
        defer { try? FileManager.default.removeItem(atPath: base) }
        let server = try ServerProcess.start(
            root: base + "/server", backend: backend,
            serveArguments: [
                "--metrics-listen", "127.0.0.1:0", "--log-format", "json", "--default-quota", "1G", "--gc-every", "1h",
            ])
        defer { server.tearDown() }
        let token = try server.createToken(container: "box")
        let folder = try TestFolder.make(
            .mount, sharedContainer: server.url("box"),
            mountArguments: [
                "--upload-delay", "0", "--token-file", token, "--metrics-listen", ":0", "--log-format", "json",
            ])
        defer { folder.tearDown() }

        try makeDirectory(folder.path(Self.folderName))
        let report = try randomBytes(300_000)
        try writeFile(folder.path(Self.folderName + "/" + Self.reportName), report)
        try writeFile(folder.path(Self.photoName), try randomBytes(100_000))
        try posix("rename") { rename(folder.path(Self.photoName), folder.path(Self.renamedName)) }
        #expect(try listDirectory(folder.root).contains(Self.renamedName))
        #expect(folder.expectSync())
        // Read back through the server: a download, and chunk bytes out.
        try folder.expectCommand(["evict", folder.path(Self.folderName + "/" + Self.reportName)])
        #expect(try readFile(folder.path(Self.folderName + "/" + Self.reportName)) == report)

        let serverURL = try #require(Self.metricsURL(inLog: server.logPath), "\(server.log(limit: 3000))")
        let mountURL = try #require(Self.metricsURL(inLog: folder.logPath), "\(folder.daemonLog())")
        #expect(serverURL.hasPrefix("http://127.0.0.1:") && mountURL.hasPrefix("http://127.0.0.1:"))
        var mount = try PrometheusScrape.fetch(mountURL)
        // The byte counters are sampled at each scrape: the download may end just after one.
        #expect(
            waitUntil(timeout: 30) {
                mount = try PrometheusScrape.fetch(mountURL)
                return (mount.total("syncfs_mount_downloaded_bytes_total") ?? 0) > 0
            }, "\(mount.text)")
        let serve = try PrometheusScrape.fetch(serverURL)

        for (section, scrape) in [("serve", serve), ("mount", mount)] {
            let rows = documented.sections[section] ?? []
            let names = Set(rows.map(\.name))
            for (name, type) in scrape.types {
                let row = rows.first { $0.name == name }
                #expect(row != nil, "\(section) exports \(name), which doc/METRICS.md does not list under `\(section)`")
                #expect(row == nil || row?.type == type, "\(name) is a \(type), doc/METRICS.md says \(row?.type ?? "")")
                if let row {
                    #expect(scrape.labelNames(name) == row.labels, "\(name)'s labels: \(scrape.labelNames(name))")
                }
            }
            for row in rows
            where row.appears == "always" || Self.causedByWorkload[section, default: []].contains(row.name) {
                #expect(scrape.types[row.name] != nil, "\(section) does not export \(row.name)\n\(scrape.text)")
            }
            // Every histogram exported is filled.
            for (name, type) in scrape.types where type == "histogram" {
                #expect((scrape.total(name + "_count") ?? 0) > 0, "\(name) is empty\n\(scrape.text)")
            }
            for name in [Self.folderName, Self.reportName, Self.photoName, Self.renamedName] {
                #expect(!scrape.text.contains(name), "the \(section) scrape names \(name)")
            }
            #expect(names.count == rows.count, "a series is listed twice under \(section)")
        }
        // Counters moved, gauges tell the state.
        for name in [
            "syncfs_server_requests_total", "syncfs_server_commit_requests_total",
        ] {
            #expect((serve.total(name) ?? 0) > 0, "\(name)\n\(serve.text)")
        }
        let chunkBytes = serve.values("syncfs_server_chunk_bytes_total")
        #expect(chunkBytes.contains { $0.labels["direction"] == "in" && $0.value >= 300_000 }, "\(serve.text)")
        #expect(chunkBytes.contains { $0.labels["direction"] == "out" && $0.value > 0 }, "\(serve.text)")
        #expect(
            serve.values("syncfs_server_commit_changes_total").contains {
                $0.labels["result"] == "committed" && $0.value >= 3
            }, "\(serve.text)")
        #expect(
            serve.values("syncfs_server_requests_total").contains {
                $0.labels["route"] == "/v1/containers/NAME/chunks/HASH" && $0.labels["method"] == "GET"
                    && $0.labels["status"] == "200"
            }, "routes are templates\n\(serve.text)")
        #expect(
            serve.values("syncfs_server_quota_used_bytes").contains { $0.labels["container"] == "box" && $0.value > 0 },
            "\(serve.text)")
        if backend == .postgresS3 {
            let storage = serve.values("syncfs_server_storage_duration_seconds_count")
            for kind in ["postgres", "s3"] {
                #expect(storage.contains { $0.labels["backend"] == kind && $0.value > 0 }, "\(kind)\n\(serve.text)")
            }
        } else {
            #expect(serve.types["syncfs_server_storage_duration_seconds"] == nil, "no storage calls on --root")
        }
        #expect((mount.total("syncfs_mount_uploaded_bytes_total") ?? 0) >= 400_000, "\(mount.text)")
        #expect((mount.total("syncfs_mount_fuse_operations_total") ?? 0) > 10, "\(mount.text)")
        #expect(
            mount.values("syncfs_mount_fuse_operations_total").contains { $0.labels["operation"] == "write" },
            "\(mount.text)")
        #expect(mount.total("syncfs_mount_online") == 1 && (mount.total("syncfs_mount_cache_budget_bytes") ?? 0) > 0)
        #expect(mount.total("syncfs_mount_queue_entries") == 0, "synced: nothing queued\n\(mount.text)")
        #expect((mount.total("syncfs_mount_propagation_seconds_count") ?? 0) >= 3, "\(mount.text)")
        // Anything but /metrics is 404.
        let other = ModelProcess.run(
            [
                "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                serverURL.replacingOccurrences(of: "/metrics", with: "/v1/health"),
            ])
        #expect(other.stdout == "404", "\(other)")

        try Self.expectJSONLines(server.logPath, label: "syncfs-server")
        try Self.expectJSONLines(folder.logPath, label: "syncfs")
    }

    /// The dashboard in dist/ asks only for series doc/METRICS.md lists (a histogram's `_bucket`,
    /// `_sum` and `_count` count as the histogram), and uses each section's series at least once.
    @Test func theDashboardUsesOnlyDocumentedSeries() throws {
        let documented = try DocumentedSeries.load()
        let types = Dictionary(documented.all.map { ($0.name, $0.type) }, uniquingKeysWith: { first, _ in first })
        let data = try Data(contentsOf: URL(fileURLWithPath: ReadmeBlocks.packageRoot + "/dist/grafana/syncfs.json"))
        let dashboard = try JSONSerialization.jsonObject(with: data)
        var expressions: [String] = []
        func collect(_ value: Any) {
            if let object = value as? [String: Any] {
                for (key, inner) in object {
                    if key == "expr", let text = inner as? String { expressions.append(text) } else { collect(inner) }
                }
            } else if let array = value as? [Any] {
                array.forEach(collect)
            }
        }
        collect(dashboard)
        #expect(expressions.count >= 10, "\(expressions)")
        let pattern = try NSRegularExpression(pattern: "syncfs_[a-z_]+")
        var used = Set<String>()
        for expression in expressions {
            let range = NSRange(expression.startIndex..., in: expression)
            let names = pattern.matches(in: expression, range: range).compactMap {
                Range($0.range, in: expression).map { String(expression[$0]) }
            }
            #expect(!names.isEmpty, "\(expression) names no SyncFS series")
            for name in names {
                var series = name
                for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                    let stem = String(name.dropLast(suffix.count))
                    if types[stem] == "histogram" { series = stem }
                }
                #expect(types[series] != nil, "\(expression): \(name) is not in doc/METRICS.md")
                if series != name { #expect(types[series] == "histogram") }
                used.insert(series)
            }
        }
        #expect(used.contains { $0.hasPrefix("syncfs_server_") } && used.contains { $0.hasPrefix("syncfs_mount_") })
    }

    /// The `serving metrics at URL` line's URL, once the log has it.
    private static func metricsURL(inLog path: String) -> String? {
        var found: String?
        _ = waitUntil(timeout: 15) {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            guard let range = text.range(of: #"http://[0-9.]+:[0-9]+/metrics"#, options: .regularExpression) else {
                return false
            }
            found = String(text[range])
            return true
        }
        return found
    }

    /// Every line of the log is one JSON object with the documented fields (doc/CLI.md, "Log
    /// lines"), and some have `label`.
    private static func expectJSONLines(_ path: String, label: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.count >= 2, "\(path): \(text)")
        let time = try NSRegularExpression(pattern: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$"#)
        let levels: Set<String> = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        var labels = Set<String>()
        // The test harness heads each daemon run with a line of its own (`---- DATE COMMAND`).
        for line in lines where !line.hasPrefix("---- ") {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard let object else {
                Issue.record("\(path): not a JSON object: \(line)")
                continue
            }
            let stamp = object["time"] as? String ?? ""
            #expect(time.firstMatch(in: stamp, range: NSRange(stamp.startIndex..., in: stamp)) != nil, "\(line)")
            #expect(levels.contains(object["level"] as? String ?? ""), "\(line)")
            #expect(object["message"] is String, "\(line)")
            labels.insert(object["label"] as? String ?? "")
            if let metadata = object["metadata"] {
                #expect((metadata as? [String: String]) != nil, "metadata values are strings: \(line)")
            }
            #expect(Set(object.keys).isSubset(of: ["time", "level", "label", "message", "metadata"]), "\(line)")
        }
        #expect(labels.contains(label), "\(path): labels \(labels)")
        #expect(text.contains("serving metrics at"), "\(path)")
    }
}
