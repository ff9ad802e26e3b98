/// Why a mount or unmount could not be done; each kind has its documented exit code (doc/CLI.md).
public struct MountError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        case badInput
        case fuseUnavailable
        case cannotCreate
        case busy
        case permissionDenied
        case failed
    }
    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// The exit code of `syncfs-mount` for this error (sysexits.h values).
    public var exitCode: Int32 {
        switch kind {
        case .badInput: return 65
        case .fuseUnavailable: return 69
        case .cannotCreate: return 73
        case .busy: return 75
        case .permissionDenied: return 77
        case .failed: return 1
        }
    }
}
