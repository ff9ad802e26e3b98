import TestSupport
import Testing

/// The one reader of the services' environment (`ServicesEnvironment`): a test that needs
/// PostgreSQL or RGW and finds them missing fails with one message naming every missing variable
/// and `scripts/services.sh start`.
@Suite struct ServicesEnvironmentTests {
    @Test func missingVariablesAreNamedWithHowToStartTheServices() {
        let partial = [
            "SYNCFS_TEST_PG_URL": "postgres://postgres@127.0.0.1:5432/postgres", "SYNCFS_TEST_S3_REGION": "",
        ]
        #expect(throws: ServicesEnvironment.Missing.self) {
            try ServicesEnvironment.require(.postgres, .s3, environment: partial)
        }
        do {
            _ = try ServicesEnvironment.require(.postgres, .s3, environment: partial)
        } catch {
            #expect(
                error.variables == [
                    "SYNCFS_TEST_S3_ENDPOINT", "SYNCFS_TEST_S3_REGION", "SYNCFS_TEST_S3_ACCESS_KEY_ID",
                    "SYNCFS_TEST_S3_SECRET_ACCESS_KEY",
                ])
            #expect(error.description.contains("scripts/services.sh start"), "\(error)")
        }
        // Only what is required must be set.
        #expect(
            (try? ServicesEnvironment.require(.postgres, environment: partial))?.postgresURL
                == partial["SYNCFS_TEST_PG_URL"])
    }
}
