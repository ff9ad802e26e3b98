import Logging

/// What every type that holds the tree shares: the tree itself, the cache, the logger and this
/// state directory's identity. Made once by `SyncFileSystem`; `RemoteChanges`, `UploadRecords`,
/// `Conflicts` and `ContentResidency` hold it (`HoldsTheTree`).
struct FolderParts: Sendable {
    let live: LiveTree
    let cache: ContentCache
    let logger: Logger
    /// This state directory's device ID (the `device_id` fact), stamped on its commits.
    let deviceIdentity: String
    /// This mount's name in conflict copies (the `device_name` fact).
    let deviceName: DeviceName
}

/// A type that holds the tree through `FolderParts`, with its members at hand.
protocol HoldsTheTree {
    var parts: FolderParts { get }
}

extension HoldsTheTree {
    var live: LiveTree { parts.live }
    var cache: ContentCache { parts.cache }
    var logger: Logger { parts.logger }
    var deviceIdentity: String { parts.deviceIdentity }
    var deviceName: DeviceName { parts.deviceName }
    var outbox: Outbox { parts.live.outbox }
    var store: MetadataStore { parts.live.store }
}
