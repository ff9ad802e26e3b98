import Foundation
import TestSupport
import Testing

@testable import SyncS3

/// Credentials come from the environment or a credentials file, as AWS tools find them; errors
/// name what is missing and never a secret.
@Suite struct S3CredentialsProviderTests {
    @Test func environmentFirst() throws {
        let credentials = try S3CredentialsProvider.resolve(
            environment: ["AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "TK"],
            home: "/nonexistent")
        #expect(credentials == S3Credentials(accessKeyID: "AK", secretAccessKey: "SK", sessionToken: "TK"))
    }

    @Test func halfAnEnvironmentIsAnError() {
        #expect(throws: S3CredentialsProvider.LookupError.incompleteEnvironment(missing: "AWS_SECRET_ACCESS_KEY")) {
            try S3CredentialsProvider.resolve(environment: ["AWS_ACCESS_KEY_ID": "AK"], home: "/nonexistent")
        }
    }

    @Test func credentialsFileProfiles() throws {
        let temporary = try TemporaryDirectory("s3-creds")
        let directory = URL(fileURLWithPath: temporary.path)
        let file = directory.appendingPathComponent("credentials")
        let text = """
            # comment
            [default]
            aws_access_key_id = DEFAULTKEY
            aws_secret_access_key=DEFAULTSECRET

            [team]
            ; another comment
            AWS_ACCESS_KEY_ID = TEAMKEY
            aws_secret_access_key = TEAM/SECRET=
            aws_session_token = TEAMTOKEN
            [broken]
            aws_access_key_id = ONLYKEY
            """
        try Data(text.utf8).write(to: file)
        let base = ["AWS_SHARED_CREDENTIALS_FILE": file.path]
        #expect(
            try S3CredentialsProvider.resolve(environment: base)
                == S3Credentials(accessKeyID: "DEFAULTKEY", secretAccessKey: "DEFAULTSECRET"))
        #expect(
            try S3CredentialsProvider.resolve(environment: base.merging(["AWS_PROFILE": "team"]) { $1 })
                == S3Credentials(accessKeyID: "TEAMKEY", secretAccessKey: "TEAM/SECRET=", sessionToken: "TEAMTOKEN"))
        #expect(throws: S3CredentialsProvider.LookupError.missingProfile("nope", file: file.path)) {
            try S3CredentialsProvider.resolve(environment: base.merging(["AWS_PROFILE": "nope"]) { $1 })
        }
        do {
            _ = try S3CredentialsProvider.resolve(environment: base.merging(["AWS_PROFILE": "broken"]) { $1 })
            Issue.record("an incomplete profile was accepted")
        } catch {
            #expect(error == .incompleteProfile("broken", file: file.path))
            #expect(!error.description.contains("ONLYKEY"))
        }
        // ~/.aws/credentials when no file is named.
        let home = directory.appendingPathComponent("home")
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".aws"), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: home.appendingPathComponent(".aws/credentials"))
        #expect(try S3CredentialsProvider.resolve(environment: [:], home: home.path).accessKeyID == "DEFAULTKEY")
    }

    @Test func nothingAnywhere() {
        #expect(throws: S3CredentialsProvider.LookupError.noCredentials(file: "/nonexistent/.aws/credentials")) {
            try S3CredentialsProvider.resolve(environment: [:], home: "/nonexistent")
        }
        #expect(throws: S3CredentialsProvider.LookupError.unreadableFile("/nonexistent/creds")) {
            try S3CredentialsProvider.resolve(environment: ["AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/creds"])
        }
    }
}
