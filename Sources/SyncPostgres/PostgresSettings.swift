import Foundation
import PostgresNIO

/// Where a PostgreSQL store lives and how to reach it, read the way PostgreSQL users expect:
///
///     postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE?sslmode=MODE
///
/// - `postgres://` or `postgresql://`; HOST is required (a name, IPv4, or `[IPv6]`); PORT
///   defaults to 5432; DATABASE to the user name; USER to `PGUSER`, else the login name.
/// - The password: the URL's (discouraged: a command line is visible to every local user), else
///   `PGPASSWORD`, else the first matching line of the password file (`PGPASSFILE`, else
///   `~/.pgpass`; `host:port:database:user:password`, `*` matches anything, `\:` and `\\` escape;
///   ignored, as libpq does, unless it is a regular file no one but its owner can read or write).
/// - `sslmode` (else `PGSSLMODE`): `disable`, `prefer` (the default, as libpq: TLS if the server offers it, not
///   verified), `require` (TLS, not verified), `verify-ca` (TLS, the chain is verified against
///   the system's roots), `verify-full` (also the host name). Any other query parameter is
///   refused: a typo must not silently drop a security setting.
///
/// The password is never part of `description` or of any error (`PostgresSettingsError` names
/// the URL without it).
public struct PostgresSettings: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public enum SSLMode: String, Sendable, CaseIterable {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var user: String
    public var database: String
    public var sslMode: SSLMode
    /// Never printed; see the type's documentation for where it comes from.
    var password: String?

    /// Parses `url`, taking the password from `environment` and the password file when the URL
    /// has none. `home` is where `~/.pgpass` is looked for.
    public init(
        url: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        home: String? = nil
    ) throws(PostgresSettingsError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else { throw PostgresSettingsError("not a postgres:// URL: \(Self.redacted(url))") }
        guard let host = components.host, !host.isEmpty else {
            throw PostgresSettingsError("the URL names no host: \(Self.redacted(url))")
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else {
            throw PostgresSettingsError("the port is not 1...65535: \(Self.redacted(url))")
        }
        self.port = port
        let login = environment["USER"] ?? environment["LOGNAME"] ?? "postgres"
        // URLComponents decodes user, password and path already (decoding twice would change "%41").
        self.user = components.user ?? environment["PGUSER"] ?? login
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !path.contains("/") else { throw PostgresSettingsError("the URL's path must be /DATABASE") }
        self.database = path.isEmpty ? self.user : path
        var sslMode = SSLMode.prefer
        if let mode = environment["PGSSLMODE"] {
            guard let parsed = SSLMode(rawValue: mode) else {
                throw PostgresSettingsError(
                    "PGSSLMODE must be one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            sslMode = parsed
        }
        for item in components.queryItems ?? [] {
            guard item.name == "sslmode" else {
                throw PostgresSettingsError("unknown parameter \"\(item.name)\" in the database URL (only sslmode)")
            }
            guard let mode = item.value.flatMap(SSLMode.init(rawValue:)) else {
                throw PostgresSettingsError(
                    "sslmode must be one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            sslMode = mode
        }
        self.sslMode = sslMode
        if let password = components.password {
            self.password = password
        } else if let password = environment["PGPASSWORD"] {
            self.password = password
        } else {
            let file = environment["PGPASSFILE"] ?? ((home ?? environment["HOME"]).map { $0 + "/.pgpass" })
            self.password = file.flatMap {
                PasswordFile.password(in: $0, host: self.host, port: port, database: self.database, user: self.user)
            }
        }
    }

    /// The settings without the password: `postgres://USER@HOST:PORT/DATABASE?sslmode=MODE`.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(user)@\(shownHost):\(port)/\(database)?sslmode=\(sslMode.rawValue)"
    }

    public var debugDescription: String { description }
    /// `dump` and debuggers show the description, not the stored password.
    public var customMirror: Mirror { Mirror(self, children: ["settings": description]) }

    /// Whether a password was found (for diagnostics; the password itself is never shown).
    public var hasPassword: Bool { password != nil }

    /// The client configuration postgres-nio takes.
    package func clientConfiguration() -> PostgresClient.Configuration {
        var unverified = TLSConfiguration.makeClientConfiguration()
        unverified.certificateVerification = .none
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(unverified)
        case .require: tls = .require(unverified)
        case .verifyCA:
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .noHostnameVerification
            tls = .require(configuration)
        case .verifyFull: tls = .require(.makeClientConfiguration())
        }
        return PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
    }

    /// `url` with any password replaced by `***`, for error messages.
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "(an unparsable URL)" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "(an unparsable URL)"
    }
}

/// A database URL that cannot be used; the text never holds the password.
public struct PostgresSettingsError: Error, Equatable, CustomStringConvertible {
    public let description: String
    package init(_ description: String) { self.description = description }
}

/// libpq's password file: `host:port:database:username:password` lines, `#` comments.
enum PasswordFile {
    static func password(in path: String, host: String, port: Int, database: String, user: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 == 0,
            let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return nil }
        let wanted = [host, String(port), database, user]
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix("#") {
            let fields = split(String(line))
            guard fields.count == 5 else { continue }
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// The fields of one line: split at unescaped `:`, with `\:` and `\\` unescaped.
    static func split(_ line: String) -> [String] {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }
}
