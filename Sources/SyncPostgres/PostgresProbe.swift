import Logging
import PostgresNIO

/// One direct connection made before a store's pool starts, so that what PostgreSQL itself
/// refuses for good is reported at once instead of after the pool's deadline: postgres-nio's
/// pool retries every failed connection attempt (a missing database, SQLSTATE 3D000, included)
/// until the request times out, and its error would only say "no answer".
///
/// Contract: `check` throws `databaseMissing` for 3D000 and `loginRefused` for class 28
/// (authentication); anything else (the server unreachable, slow, TLS) is left to the pool,
/// which reports it as `unavailable` within its deadline. Nothing here reads or prints the
/// password beyond handing it to the connection.
enum PostgresProbe {
    static func check(_ settings: PostgresSettings, timeout: Duration, logger: Logger) async throws(PostgresStoreError)
    {
        let configuration: PostgresConnection.Configuration
        do {
            configuration = try settings.connectionConfiguration()
        } catch {
            return  // The pool reports the same TLS problem in its own words.
        }
        do {
            let connection = try await withTimeout(timeout) {
                try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            }
            try? await connection.close()
        } catch {
            guard let state = PostgresFailure.sqlState(error) else { return }
            if state == "3D000" { throw .databaseMissing(settings.description) }
            if state.hasPrefix("28") {
                throw .loginRefused("\(settings): \(PostgresFailure.classify(error).reason)")
            }
        }
    }
}

extension PostgresSettings {
    /// The configuration of a single connection (`PostgresProbe`), with the pool's TLS choice.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        let tls: PostgresConnection.Configuration.TLS
        switch sslMode {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(try NIOSSLContext(configuration: unverified))
        case .require: tls = .require(try NIOSSLContext(configuration: unverified))
        case .verifyCA:
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .noHostnameVerification
            tls = .require(try NIOSSLContext(configuration: configuration))
        case .verifyFull: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        return PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
    }
}
