/// Why a container path cannot be opened or created.
public enum ContainerOpenError: Error, CustomStringConvertible, Sendable {
    /// The path exists but is not a SyncFS container (a file, or a non-empty foreign directory).
    case notAContainer(String)
    /// The container was made by a newer SyncFS.
    case unsupportedFormat(String)
    case cannotCreate(String)

    public var description: String {
        switch self {
        case .notAContainer(let reason), .unsupportedFormat(let reason), .cannotCreate(let reason): return reason
        }
    }
}
