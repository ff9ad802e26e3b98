import Foundation
import TestSupport
import Testing

@testable import SyncPostgres

/// Reading a `postgres://` URL the way libpq users expect, and never showing the password.
struct PostgresSettingsTests {
    let secret = "s3cr3t-Hunter2"

    @Test func readsEveryPartOfTheURL() throws {
        let settings = try PostgresSettings(
            url: "postgresql://alice@db.example:6543/files?sslmode=verify-full", environment: [:])
        #expect(settings.host == "db.example" && settings.port == 6543)
        #expect(settings.user == "alice" && settings.database == "files" && settings.sslMode == .verifyFull)
        #expect(!settings.hasPassword)
    }

    @Test func defaultsAreLibpqs() throws {
        let settings = try PostgresSettings(url: "postgres://db", environment: ["PGUSER": "bob"])
        #expect(settings.port == 5432 && settings.user == "bob" && settings.database == "bob")
        #expect(settings.sslMode == .prefer)
    }

    @Test func refusesWhatItCannotUse() {
        for url in [
            "http://db/x", "postgres:///x", "postgres://db/x?sslmode=allow-ish", "postgres://db/x?sslmod=require",
            "postgres://db/a/b", "postgres://db:0/x",
        ] {
            #expect(throws: PostgresSettingsError.self, "\(url)") { try PostgresSettings(url: url, environment: [:]) }
        }
    }

    @Test func passwordFromTheURLIsNeverShown() throws {
        let url = "postgres://alice:\(secret)@db:5432/files"
        let settings = try PostgresSettings(url: url, environment: [:])
        #expect(settings.password == secret)
        #expect(!settings.description.contains(secret) && !String(reflecting: settings).contains(secret))
        var dumped = ""
        dump(settings, to: &dumped)
        #expect(!dumped.contains(secret))
        do {
            _ = try PostgresSettings(url: url + "?bad=1", environment: [:])
            Issue.record("an unknown parameter was accepted")
        } catch {
            #expect(!error.description.contains(secret))
        }
        #expect(!PostgresSettings.redacted(url).contains(secret))
    }

    @Test func percentEncodingIsDecodedOnce() throws {
        let settings = try PostgresSettings(
            url: "postgres://al%40ce:p%2541ss%40w%3Ard@db/my%20files", environment: [:])
        #expect(settings.user == "al@ce" && settings.password == "p%41ss@w:rd" && settings.database == "my files")
    }

    @Test func sslModeFromPGSSLMODEUnlessTheURLSaysOtherwise() throws {
        #expect(try PostgresSettings(url: "postgres://db/x", environment: ["PGSSLMODE": "require"]).sslMode == .require)
        let url = try PostgresSettings(url: "postgres://db/x?sslmode=disable", environment: ["PGSSLMODE": "require"])
        #expect(url.sslMode == .disable)
        #expect(throws: PostgresSettingsError.self) {
            try PostgresSettings(url: "postgres://db/x", environment: ["PGSSLMODE": "sometimes"])
        }
    }

    @Test func passwordFromPGPASSWORD() throws {
        let settings = try PostgresSettings(url: "postgres://alice@db/files", environment: ["PGPASSWORD": secret])
        #expect(settings.password == secret)
    }

    @Test func passwordFromThePasswordFile() throws {
        let temporary = try TemporaryDirectory("pgpass")
        let directory = temporary.path
        let file = directory + "/.pgpass"
        let lines = [
            "# comment", "other:5432:files:alice:wrong", "db:5432:files:bob:wrong",
            "db:*:files:alice:pa\\:ss\\\\word", "*:*:*:*:fallback",
        ]
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        let alice = try PostgresSettings(url: "postgres://alice@db/files", environment: [:], home: directory)
        #expect(alice.password == "pa:ss\\word")
        let carol = try PostgresSettings(url: "postgres://carol@db/x", environment: ["PGPASSFILE": file])
        #expect(carol.password == "fallback")
        // As libpq: a password file others can read is ignored.
        chmod(file, 0o644)
        let ignored = try PostgresSettings(url: "postgres://alice@db/files", environment: [:], home: directory)
        #expect(!ignored.hasPassword)
    }

    @Test func sslModesMapToTLSSettings() throws {
        for mode in PostgresSettings.SSLMode.allCases {
            let settings = try PostgresSettings(url: "postgres://db/x?sslmode=\(mode.rawValue)", environment: [:])
            #expect(settings.sslMode == mode)
            _ = settings.clientConfiguration()
        }
    }
}
