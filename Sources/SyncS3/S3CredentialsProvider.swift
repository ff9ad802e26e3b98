import Foundation

/// Finds credentials the way AWS tools do, never from the command line: `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN`) when both are set, otherwise the profile
/// `AWS_PROFILE` (or `default`) of the credentials file (`AWS_SHARED_CREDENTIALS_FILE`, or
/// `~/.aws/credentials`). Errors name the variables and the file, never a secret.
public enum S3CredentialsProvider {
    public enum LookupError: Error, Equatable, CustomStringConvertible {
        case incompleteEnvironment(missing: String)
        case noCredentials(file: String)
        case unreadableFile(String)
        case missingProfile(String, file: String)
        case incompleteProfile(String, file: String)

        public var description: String {
            switch self {
            case .incompleteEnvironment(let missing):
                "\(missing) is not set (both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are needed)"
            case .noCredentials(let file):
                "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or write \(file)"
            case .unreadableFile(let file): "cannot read the credentials file \(file)"
            case .missingProfile(let profile, let file): "no profile [\(profile)] in \(file)"
            case .incompleteProfile(let profile, let file):
                "profile [\(profile)] in \(file) lacks aws_access_key_id or aws_secret_access_key"
            }
        }
    }

    /// Credentials from `environment` (pass `ProcessInfo.processInfo.environment`) or the file it
    /// names; `home` is where `.aws/credentials` is looked for when no file is named.
    public static func resolve(
        environment: [String: String], home: String? = nil
    ) throws(LookupError) -> S3Credentials {
        let key = environment["AWS_ACCESS_KEY_ID"].flatMap { $0.isEmpty ? nil : $0 }
        let secret = environment["AWS_SECRET_ACCESS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        switch (key, secret) {
        case (let key?, let secret?):
            return S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: token)
        case (nil, _?): throw .incompleteEnvironment(missing: "AWS_ACCESS_KEY_ID")
        case (_?, nil): throw .incompleteEnvironment(missing: "AWS_SECRET_ACCESS_KEY")
        case (nil, nil): break
        }
        let profile = environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        let named = environment["AWS_SHARED_CREDENTIALS_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        let home = home ?? environment["HOME"] ?? NSHomeDirectory()
        let file = named ?? (home as NSString).appendingPathComponent(".aws/credentials")
        guard FileManager.default.fileExists(atPath: file) else {
            if named != nil { throw .unreadableFile(file) }
            throw .noCredentials(file: file)
        }
        guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8)
        else { throw .unreadableFile(file) }
        guard let section = parseINI(text)[profile] else { throw .missingProfile(profile, file: file) }
        guard let key = section["aws_access_key_id"], !key.isEmpty, let secret = section["aws_secret_access_key"],
            !secret.isEmpty
        else { throw .incompleteProfile(profile, file: file) }
        let sessionToken = section["aws_session_token"].flatMap { $0.isEmpty ? nil : $0 }
        return S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: sessionToken)
    }

    /// The sections of an AWS credentials file: `[name]` headers, `key = value` lines, `#` and `;`
    /// comment lines; keys are lowercased, values trimmed. A later duplicate wins, as in botocore.
    static func parseINI(_ text: String) -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for rawLine in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                current = name
                sections[name, default: [:]] = sections[name, default: [:]]
                continue
            }
            guard let current, let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            sections[current, default: [:]][name] = value
        }
        return sections
    }
}
