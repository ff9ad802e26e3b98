import SyncBackend

/// Why a mount or unmount could not be done; each kind has its documented exit code (doc/CLI.md).
public struct MountError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        case badInput
        case fuseUnavailable
        case cannotCreate
        case busy
        case permissionDenied
        case failed
        /// The container did not answer for long enough (a first mount that could not attach).
        case unreachable
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
        case .fuseUnavailable: return .unavailable
        case .cannotCreate: return .cannotCreate
        case .busy: return .temporaryFailure
        case .permissionDenied: return .permissionDenied
        case .failed: return .failure
        case .unreachable: return .temporaryFailure
        }
    }
}
