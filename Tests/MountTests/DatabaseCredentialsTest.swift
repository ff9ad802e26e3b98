import Foundation
import Testing

/// Credentials given the supported way — `PGPASSWORD` for PostgreSQL, `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY` for S3 — never appear in what `serve --database` prints when it cannot
/// connect, even at `--log-level trace`, against the real services. (A password in
/// the database URL is refused outright: `DatabaseServeInputTest`.)
@Suite(.serialized)
struct DatabaseCredentialsTest {
    @Test func secretsFromTheEnvironmentNeverAppearInErrorsOrLogs() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        _ = try backend.initialize(container: "box")
        let tag = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let secrets = [
            "PGPASSWORD": "pg-secret-\(tag)",
            "AWS_ACCESS_KEY_ID": "AKID\(tag.uppercased())",
            "AWS_SECRET_ACCESS_KEY": "s3-secret-\(tag)",
        ]
        var unreachableDatabase = try #require(URLComponents(string: backend.databaseURL))
        unreachableDatabase.port = 1
        let deadEndpoint = backend.chunkStore.replacingOccurrences(
            of: #"endpoint=[^&]*"#, with: "endpoint=http://127.0.0.1:1", options: .regularExpression)
        let cases: [(what: String, database: String, chunkStore: String)] = [
            ("a database that does not answer", try #require(unreachableDatabase.string), backend.chunkStore),
            ("a database that does not exist", backend.databaseURL + "_none", backend.chunkStore),
            // The real RGW, which does not know these keys: refused.
            ("an object store refusing the keys", backend.databaseURL, backend.chunkStore),
            ("an object store that does not answer", backend.databaseURL, deadEndpoint),
        ]
        for (what, database, chunkStore) in cases {
            let result = try backend.syncfs(
                [
                    "serve", "--database", database, "--chunk-store", chunkStore, "--tokens", backend.tokensDir,
                    "--listen", "127.0.0.1:0", "--log-level", "trace",
                ], env: secrets, timeout: 90)
            #expect(result.status != 0, "\(what): \(result)")
            #expect(!result.stdout.contains("listening on"), "\(what): \(result)")
            #expect(!result.stderr.isEmpty, "\(what): nothing said: \(result)")
            for (name, secret) in secrets {
                #expect(
                    !result.stderr.contains(secret) && !result.stdout.contains(secret),
                    "\(what): \(name) shows: \(result)")
            }
        }
    }
}
