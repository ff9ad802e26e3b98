import Foundation
import Glibc
import Testing

/// `serve --database` and `server-init` refuse bad input clearly, never show a credential, and
/// leave nothing half-made, against the real PostgreSQL and RGW of the test services.
@Suite(.serialized)
struct DatabaseServeInputTest {
    private func serve(_ backend: DatabaseBackendFixture, _ arguments: [String]) throws -> ModelProcessResult {
        try backend.syncfs(["serve"] + arguments + ["--listen", "127.0.0.1:0"], timeout: 90)
    }

    @Test func aDatabaseWithoutTheSchemaIsRefusedNamingServerInit() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        // A chunk directory as server-init makes it; the database is fresh, without the schema.
        let chunks = backend.baseDir + "/chunks"
        try makeDirectory(chunks, mode: 0o700)
        try writeFile(chunks + "/syncfs-blobs", "")
        let result = try serve(
            backend, ["--database", backend.databaseURL, "--chunk-store", chunks, "--tokens", backend.tokensDir])
        #expect(result.status == 65, "\(result)")
        #expect(result.stderr.contains("server-init"), "\(result)")
        #expect(!pathExists(backend.tokensDir), "a refused serve made the token directory")
    }

    @Test func credentialsOnTheCommandLineAreRefusedAndNeverEchoed() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        let secret = "hunter2-secret"
        let withPassword = backend.databaseURL.replacingOccurrences(
            of: "postgres://postgres@", with: "postgres://postgres:\(secret)@")
        #expect(withPassword.contains(secret))
        for arguments in [
            ["--database", withPassword, "--chunk-store", backend.baseDir, "--tokens", backend.tokensDir],
            [
                "--database", backend.databaseURL, "--chunk-store",
                "s3://bucket-name?endpoint=http://key:\(secret)@127.0.0.1:1&region=r", "--tokens", backend.tokensDir,
            ],
        ] {
            let result = try serve(backend, arguments)
            #expect(result.status == 64, "\(result)")
            #expect(!result.stderr.contains(secret) && !result.stdout.contains(secret), "\(result)")
        }
        let initResult = try backend.syncfs(["server-init", "--database", withPassword])
        #expect(initResult.status == 64, "\(initResult)")
        #expect(!initResult.stderr.contains(secret), "\(initResult)")
    }

    @Test func anUnreachableChunkStoreOrDatabaseStopsServeBeforeItListens() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        _ = try backend.initialize(container: "box")
        // Nothing listens on port 1.
        let deadS3 = try serve(
            backend,
            [
                "--database", backend.databaseURL, "--chunk-store",
                "s3://bucket-name?endpoint=http://127.0.0.1:1&region=r",
                "--tokens", backend.tokensDir,
            ])
        #expect(deadS3.status == 75, "\(deadS3)")
        #expect(deadS3.stderr.contains("chunk store"), "\(deadS3)")
        #expect(!deadS3.stdout.contains("listening on"), "\(deadS3)")
        // A bucket that does not exist is not "every chunk is missing".
        let missingBucket = backend.chunkStore.replacingOccurrences(of: "s3://syncfs-mount-", with: "s3://syncfs-none-")
        let noBucket = try serve(
            backend, ["--database", backend.databaseURL, "--chunk-store", missingBucket, "--tokens", backend.tokensDir])
        #expect(noBucket.status == 65, "\(noBucket)")
        #expect(!noBucket.stdout.contains("listening on"), "\(noBucket)")
        // A database that does not exist.
        let noDatabase = try serve(
            backend,
            [
                "--database", backend.databaseURL + "_none", "--chunk-store", backend.chunkStore, "--tokens",
                backend.tokensDir,
            ])
        // PostgreSQL's own answer (SQLSTATE 3D000), at once: 65 and "does not exist", not the
        // pool's retries until its deadline (75, "no answer within 10 s").
        #expect(noDatabase.status == 65, "\(noDatabase)")
        #expect(noDatabase.stderr.contains("_none"), "\(noDatabase)")
        #expect(noDatabase.stderr.contains("does not exist"), "\(noDatabase)")
        #expect(!noDatabase.stdout.contains("listening on"), "\(noDatabase)")
        for command in [
            ["server-init", "--database", backend.databaseURL + "_none"],
            ["token", "list", "--database", backend.databaseURL + "_none"],
        ] {
            let result = try backend.syncfs(command)
            #expect(result.status == 65 && result.stderr.contains("does not exist"), "\(result)")
        }
    }

    @Test func rootAndDatabaseExcludeEachOther() throws {
        let backend = try DatabaseBackendFixture.make()
        defer { backend.tearDown() }
        for arguments in [
            ["--root", backend.baseDir, "--database", backend.databaseURL],
            ["--database", backend.databaseURL, "--tokens", backend.tokensDir],
            ["--database", backend.databaseURL],
            ["--root", backend.baseDir, "--chunk-store", backend.chunkStore],
            [],
        ] {
            let result = try serve(backend, arguments)
            #expect(result.status == 64, "\(result)")
        }
    }
}
