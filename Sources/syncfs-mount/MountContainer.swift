import Logging
import SyncBackend
import SyncClient
import SyncFS

/// Which container a mount syncs with (doc/SEMANTICS.md, "Offline").
///
/// - The **first mount** of a state directory (no `container_id` recorded) opens the container at
///   the path. With `create` (`mount --create`) it makes one if the path is missing or an empty
///   directory whose parent exists (`ContainerCreation`); without, a path that is not a container
///   is refused and nothing is created.
/// - **Every later mount** never creates one: it uses a `ReconnectingContainer` expecting the
///   recorded ID, and mounts even when the container is unreachable (offline start); the engine
///   catches up when it is back. Another container at the path is refused, as on the first mount
///   (the state directory belongs to the recorded one).
/// - A container on a sync server (`http(s)://HOST:PORT/NAME`): `ServerContainer`.
/// - A sealed (end-to-end encrypted) container is wrapped in a `SealedContainer`
///   (`SealedMounting`).
/// - With an outage switch in the daemon's environment (`TestHooks`, set by the mount tests
///   only), the container is wrapped in an `OutageFileContainer`: it is unreachable while that
///   file exists.
enum MountContainer {
    /// The daemon's container opener for `configuration` (`MountDaemon.run`).
    static func opener(_ configuration: MountConfiguration, logger: Logger) -> ContainerOpener {
        { recorded throws(MountError) in
            let container = try open(
                configuration.container, recordedID: recorded.id, recordedPath: recorded.location,
                stateDirectory: recorded.stateDirectory, create: configuration.createContainer,
                tokenFile: configuration.tokenFile, caFile: configuration.caFile,
                testOutageFile: TestHooks.outageFile(), logger: logger)
            return try SealedMounting.wrap(container, recorded: recorded, configuration: configuration, logger: logger)
        }
    }

    static func open(
        _ path: String, recordedID: String?, recordedPath: String?, stateDirectory: String, create: Bool = false,
        tokenFile: String? = nil, caFile: String? = nil, testOutageFile: String? = nil, logger: Logger
    ) throws(MountError) -> any Container {
        let container: any Container
        if ServerAddress.looksLikeURL(path) {
            container = try ServerContainer.open(
                path, tokenFile: tokenFile, caFile: caFile, recordedID: recordedID, stateDirectory: stateDirectory,
                logger: logger)
        } else {
            if tokenFile != nil || caFile != nil {
                throw MountError(.badInput, "--token-file and --ca-file are for a server URL, not a local container")
            }
            container = try open(
                path, recordedID: recordedID, recordedPath: recordedPath, stateDirectory: stateDirectory,
                create: create, logger: logger)
        }
        guard let testOutageFile else { return container }
        logger.notice("test outages: the container is unreachable while \(testOutageFile) exists")
        return OutageFileContainer(container, path: testOutageFile)
    }

    private static func open(
        _ path: String, recordedID: String?, recordedPath: String?, stateDirectory: String, create: Bool,
        logger: Logger
    ) throws(MountError) -> any Container {
        guard let recordedID else {
            return create ? try ContainerCreation.openOrCreate(path) : try ContainerCreation.open(path)
        }
        let container = ReconnectingContainer(path: path, expectedID: recordedID) { event in
            switch event {
            case .reconnected: logger.notice("container \(path) is reachable again")
            case .unreachable(let message): logger.notice("\(message); working offline")
            case .refused(let message): logger.error("\(message)")
            }
        }
        switch container.connectNow() {
        case .connected:
            break
        case .unreachable(let reason):
            logger.notice("container \(path) unreachable; starting offline (\(reason))")
        case .otherContainer(let found, _):
            throw MountError(
                .badInput,
                "the state directory \(stateDirectory) belongs to another container (\(recordedPath ?? recordedID)), "
                    + "not \(path) (\(found)); use another --state-dir")
        case .unsupportedFormat(let reason):
            throw MountError(.badInput, reason)
        }
        return container
    }
}
