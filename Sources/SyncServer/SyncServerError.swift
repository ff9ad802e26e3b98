import SyncBackend

/// Why the server, or a token command, cannot do what it was asked; each kind has the exit code
/// `syncfs-mount` documents for it (doc/CLI.md, sysexits.h values).
public struct SyncServerError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        /// 65: a missing root, bad TLS files, an invalid container name, an unknown token ID.
        case badInput
        /// 73: the token database or a container cannot be created.
        case cannotCreate
        /// 75: the address is in use.
        case busy
        /// 77: the address may not be bound by this user.
        case permissionDenied
        /// 1: anything else (the message says what).
        case failed
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// How `syncfs-mount` exits for this error.
    public var exitStatus: ExitStatus {
        switch kind {
        case .badInput: return .badInput
        case .cannotCreate: return .cannotCreate
        case .busy: return .temporaryFailure
        case .permissionDenied: return .permissionDenied
        case .failed: return .failure
        }
    }
}
