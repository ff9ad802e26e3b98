import SyncBackend

/// What a state directory records about its container, handed to the command's container
/// opener once the state directory is locked (`MountDaemon.run`).
///
/// The daemon does not choose containers: the command line (`syncfs-mount`, which knows local
/// containers and the HTTP client) opens the one the mount syncs with from this and its own
/// arguments, so the `SyncFS` library links no HTTP client.
public struct RecordedContainer: Sendable {
    /// The container's ID, recorded by the state directory's first mount; nil before it.
    public var id: String?
    /// Where the container was, as the mount that recorded it named it.
    public var location: String?
    /// The state directory (absolute).
    public var stateDirectory: String
    /// Whether the container is sealed (end-to-end encrypted), as the first mount found; nil
    /// before it, and on state directories older than this record.
    public var sealed: Bool?
}

/// Opens the container a mount syncs with; throws a `MountError` with the documented exit
/// status (bad input, cannot create, failed) when it cannot.
public typealias ContainerOpener = (RecordedContainer) throws(MountError) -> any Container
