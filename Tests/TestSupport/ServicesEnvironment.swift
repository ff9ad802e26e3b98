import Foundation

/// The services the PostgreSQL + S3 tests run against (`scripts/services.sh start`: a throwaway
/// PostgreSQL and Ceph RGW), read from the environment in one place.
///
/// A test that needs them and finds them missing FAILS with the one message of
/// `ServicesEnvironment.Missing`, naming every variable missing and how to start the services:
/// it never skips.
///
///     let services = try ServicesEnvironment.require(.postgres, .s3)
public struct ServicesEnvironment: Sendable {
    /// Which service a test needs.
    public enum Service: Sendable {
        /// `SYNCFS_TEST_PG_URL`.
        case postgres
        /// `SYNCFS_TEST_S3_ENDPOINT`, `_REGION`, `_ACCESS_KEY_ID`, `_SECRET_ACCESS_KEY`.
        case s3

        var variables: [String] {
            switch self {
            case .postgres: return ["SYNCFS_TEST_PG_URL"]
            case .s3:
                return [
                    "SYNCFS_TEST_S3_ENDPOINT", "SYNCFS_TEST_S3_REGION", "SYNCFS_TEST_S3_ACCESS_KEY_ID",
                    "SYNCFS_TEST_S3_SECRET_ACCESS_KEY",
                ]
            }
        }
    }

    /// Some variables are not set.
    public struct Missing: Error, CustomStringConvertible {
        public let variables: [String]
        public var description: String {
            "\(variables.joined(separator: ", ")) not set: these tests need the services of "
                + "`scripts/services.sh start` (PostgreSQL and Ceph RGW); run them through scripts/test.sh, "
                + "or eval \"$(scripts/services.sh start)\" first"
        }
    }

    /// The administrator URL of the test PostgreSQL (no password: the cluster trusts local users).
    /// Every value is read whatever was required, but is sure to be non-empty only if its
    /// service was.
    public let postgresURL: String
    /// The RGW endpoint (`http://127.0.0.1:PORT`), region and keys.
    public let s3Endpoint: String
    public let s3Region: String
    public let s3AccessKeyID: String
    public let s3SecretAccessKey: String

    /// The variables of `services`, or `Missing` naming every one that is not set.
    public static func require(
        _ services: Service..., environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(Missing) -> ServicesEnvironment {
        let names = services.flatMap(\.variables)
        let missing = names.filter { (environment[$0] ?? "").isEmpty }
        guard missing.isEmpty else { throw Missing(variables: missing) }
        let value = { (name: String) in environment[name] ?? "" }
        return ServicesEnvironment(
            postgresURL: value("SYNCFS_TEST_PG_URL"), s3Endpoint: value("SYNCFS_TEST_S3_ENDPOINT"),
            s3Region: value("SYNCFS_TEST_S3_REGION"), s3AccessKeyID: value("SYNCFS_TEST_S3_ACCESS_KEY_ID"),
            s3SecretAccessKey: value("SYNCFS_TEST_S3_SECRET_ACCESS_KEY"))
    }
}
