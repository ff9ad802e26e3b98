import Foundation
import Glibc
import Logging
import SyncBackend

/// What a mount needs to know, as the command line gave it (paths absolute).
public struct MountConfiguration: Sendable {
    public var container: String
    public var mountpoint: String
    public var stateDirectory: String
    /// Unmount when standard input reaches end-of-file (a test runner's lifeline).
    public var lifeline: Bool
    /// How long the kernel may cache names and attributes, in seconds (`KernelCachePolicy`).
    var cacheTimeout: Double = KernelCachePolicy.timeout
    /// How long a changed file must stay closed and unchanged before it is uploaded, in ms.
    public var uploadDelayMilliseconds: Int = 100
    /// zlib level for uploaded chunks (0–9).
    public var compressionLevel: Int32 = 1
    /// The cache budget (doc/SEMANTICS.md, "The cache budget").
    public var cacheSize: CacheSize = .percentOfFilesystem(25)
    /// Process names whose reads never download (`--no-download-for`).
    public var noDownloadProcesses: Set<String> = []
    /// Echo remote changes through the mount point so inotify watchers see them (`InotifyEcho`).
    public var inotifyEcho = true
    /// Echo bursts of remote changes even when no process may be watching (`RemoteEcho`).
    public var echoUnwatchedBursts = false
    /// flock and fcntl locks go to the daemon, which holds them across every mount of the
    /// container (`MountLocks`); false leaves them to the kernel, for this mount only.
    public var locksAcrossMounts = true
    /// Apply remote setuid/setgid bits and mount without `nosuid,nodev` (`--allow-remote-setuid`).
    public var allowRemoteSetuid = false
    /// `--read-only`, `--allow-other`, `--no-exec` (`MountKernelFlags`).
    public var kernelFlags = MountKernelFlags()
    /// For a server URL: the file holding the bearer token (`--token-file`).
    public var tokenFile: String?
    /// For an https URL: trust only the certificates in this PEM file (`--ca-file`).
    public var caFile: String?
    /// The local file defining the merge commands this machine allows (`--merge-commands`, or
    /// `LocalMergeCommands.defaultPath`); nil: none.
    public var mergeCommandsFile: String?
    /// What the mount ignores (`--ignore-file`, `--no-default-ignores`, `--no-synced-ignores`).
    public var ignores = IgnoreOptions()
    /// A state directory's first mount makes the local container if it is missing (`--create`).
    public var createContainer = false
    /// The container must be sealed (end-to-end encrypted; `--encrypted`, `--create-encrypted`):
    /// a first mount refuses one that is not, so a server cannot pass a sealed container off as
    /// a plain one to a new device.
    public var encrypted = false
    /// The device's private keys for sealed containers (`--device-key`); nil: the default
    /// (`StateDirectory.deviceKeyPath`).
    public var deviceKeyFile: String?
    /// A first mount of a sealed container by a device that is not a member yet joins with the
    /// recovery key in this file (`--recovery-key-file`).
    public var recoveryKeyFile: String?
    /// The admission code the approving device printed, for the first mount of a device admitted
    /// by approval (`mount --admission-code`).
    public var admissionCode: String?
    /// The name conflict copies give this mount (`--device-name`); nil: the stored or default one.
    public var deviceName: DeviceName?
    /// How long a first mount waits for a container that does not answer before it fails, in
    /// seconds (`--attach-timeout`; `FirstAttach`).
    public var attachTimeout: Double = 30
    /// Write `attaching N` lines on standard output before `ready` (set by the command that
    /// starts the daemon in the background; `FirstAttach`).
    public var reportAttachProgress = false
    /// When the mass-delete guard trips (`--guard-deletes`, `--guard-fraction`, `--guard-window`);
    /// nil: `--no-guard`.
    public var deleteGuard: GuardThresholds? = GuardThresholds()
    /// How long a lease of this mount's locks lasts at the container, in seconds (renewed every
    /// third of it; doc/SEMANTICS.md, "Locks").
    public var lockLeaseSeconds = 30
    /// `--upload-limit`, `--download-limit` (nil: none) and `--limit-schedule` (no entries: none).
    package var bandwidthLimits = BandwidthLimits()
    package var limitSchedule = LimitSchedule.none
    /// The series `--metrics-listen` exports (`MountMetrics`); nil: no metrics.
    public var metrics: MountMetrics?

    public init(container: String, mountpoint: String, stateDirectory: String, lifeline: Bool) {
        self.container = container
        self.mountpoint = mountpoint
        self.stateDirectory = stateDirectory
        self.lifeline = lifeline
    }
}

/// The daemon: checks its inputs, opens the state, mounts, serves until unmounted, and shuts
/// down in order — stop intake (the session ends), commit and close the database, release the
/// state lock.
public enum MountDaemon {
    /// Runs the mount in the calling thread. `openContainer` opens the container once the state
    /// directory is locked; `ready` is called once the mount is live.
    public static func run(
        _ configuration: MountConfiguration, openContainer: ContainerOpener, logger: Logger, ready: () -> Void
    ) throws(MountError) {
        let systemd = SystemdNotifier.fromEnvironment()
        try checkFuseAvailable()
        try prepareMountpoint(configuration.mountpoint, logger: logger)
        let state = StateDirectory(path: configuration.stateDirectory)
        try state.create()
        let lock = try state.lock()
        defer { close(lock) }
        try MountRegistry.prepare()
        let (fileSystem, container) = try openState(
            state, configuration: configuration, openContainer: openContainer, logger: logger)
        fileSystem.residency.hydrations.setDownloadExclusions(configuration.noDownloadProcesses)
        fileSystem.allowRemoteSetuid(configuration.allowRemoteSetuid)
        fileSystem.configureIgnores(
            configuration.ignores.settings(mountpoint: configuration.mountpoint, logger: logger))
        // The engine starts before the session: a first mount is served only once its tree is
        // attached (`FirstAttach`); the kernel learns nothing before it is mounted.
        let engine = SyncEngine(
            fileSystem: fileSystem, container: container,
            options: engineOptions(configuration, statePath: state.path, logger: logger), logger: logger)
        engine.attaching.prepare()
        engine.start()
        let locks = MountLocking.start(
            fileSystem: fileSystem, container: container, leaseSeconds: configuration.lockLeaseSeconds, logger: logger)
        let session: FuseSession
        do throws(MountError) {
            session = try mount(
                fileSystem, engine: engine, locks: locks, configuration: configuration, systemd: systemd,
                logger: logger)
        } catch {
            locks.stop()
            throw error
        }
        // Sampled while the mount is live; not once the engine stops and the state closes.
        configuration.metrics?.attach(engine)
        let result = serve(
            session, fileSystem: fileSystem, engine: engine, locks: locks, configuration: configuration,
            statePath: state.path, systemd: systemd, logger: logger, ready: ready)
        configuration.metrics?.attach(nil)
        let left = fileSystem.outbox.items.count
        logger.info(
            "unmounted \(configuration.mountpoint); committing state (\(left) changes stay queued for the next mount)")
        do {
            try fileSystem.shutDown()
        } catch {
            throw MountError(.failed, "could not commit the state database on unmount: \(error)")
        }
        // libfuse returns a negative errno when the loop failed.
        if result < 0 {
            logger.warning("the FUSE session ended with error \(-result)")
        }
    }

    /// Opens the state database and the cache, then the container (a state directory's first
    /// mount creates the recorded one; later ones may start offline), and records what this
    /// mount was given.
    private static func openState(
        _ state: StateDirectory, configuration: MountConfiguration, openContainer: ContainerOpener, logger: Logger
    ) throws(MountError) -> (SyncFileSystem, any Container) {
        var policy = UploadQueue.Policy.standard
        policy.quietDelay = Duration.milliseconds(configuration.uploadDelayMilliseconds).inNanoseconds
        do {
            let store = try MetadataStore(
                path: state.databasePath, reserve: SpaceReserve(directory: state.path, logger: logger))
            let facts = try store.load().facts
            let container = try openContainer(
                RecordedContainer(
                    id: facts[.containerID], location: facts[.container], stateDirectory: state.path,
                    sealed: facts[.sealed]))
            store.factSet(.containerID, container.containerID)
            // Recorded with the ID, so that a later mount never takes a sealed container for a
            // plain one, whatever became of the files beside (the sealed container's head).
            store.factSet(.sealed, (container as? ReportingContainer)?.report.encryption != nil)
            store.factSet(.container, configuration.container)
            // Every mount records its mount point, and a server's token and CA files (cleared when
            // this mount gives none).
            store.factSet(.mountpoint, configuration.mountpoint)
            store.factSet(.tokenFile, configuration.tokenFile)
            store.factSet(.caFile, configuration.caFile)
            let fileSystem = try SyncFileSystem(
                store: store, cache: try ContentCache(directory: state.cachePath), statePath: state.path,
                logger: logger, uploadPolicy: policy, deviceName: configuration.deviceName)
            return (fileSystem, container)
        } catch let error as MountError {
            throw error
        } catch let refusal as UsedStateGuard.Refusal {
            throw MountError(.badInput, refusal.description)
        } catch {
            if let refusal = DamagedStateDatabase.refusal(error, statePath: state.path) { throw refusal }
            throw MountError(.cannotCreate, "cannot open the state in \(state.path): \(error)")
        }
    }

    /// The engine's options from the mount's configuration.
    private static func engineOptions(_ configuration: MountConfiguration, statePath: String, logger: Logger)
        -> SyncEngine.Options
    {
        var options = SyncEngine.Options()
        options.compressionLevel = configuration.compressionLevel
        options.cacheBudget = configuration.cacheSize.bytes(forFilesystemOf: statePath)
        options.mergeCommands = LocalMergeCommands(
            path: configuration.mergeCommandsFile, mountpoint: configuration.mountpoint)
        options.deleteGuard = configuration.deleteGuard?.window
        options.bandwidth.plain = configuration.bandwidthLimits
        options.bandwidth.schedule = configuration.limitSchedule
        if let budget = options.cacheBudget {
            logger.info("cache budget: \(budget) bytes")
        }
        return options
    }

    /// Waits for a needed first attach, then mounts. On failure the engine is stopped and the
    /// state committed before the error is thrown.
    private static func mount(
        _ fileSystem: SyncFileSystem, engine: SyncEngine, locks: MountLocks, configuration: MountConfiguration,
        systemd: SystemdNotifier?, logger: Logger
    ) throws(MountError) -> FuseSession {
        do {
            try FirstAttach.waitIfNeeded(engine, configuration: configuration, systemd: systemd, logger: logger)
            return try FuseSession(
                fileSystem: fileSystem, mountpoint: configuration.mountpoint,
                fsName: "syncfs:" + configuration.container,
                cacheTimeout: configuration.cacheTimeout, honoursSetuid: configuration.allowRemoteSetuid,
                flags: configuration.kernelFlags, locks: configuration.locksAcrossMounts ? locks : nil,
                timing: configuration.metrics?.makeTiming(), logger: logger)
        } catch {
            engine.stop()
            do {
                try fileSystem.shutDown()
            } catch {
                logger.error("could not commit the state after the mount failed: \(error)")
            }
            if let error = error as? MountError { throw error }
            throw MountError(geteuid() == 0 ? .failed : .permissionDenied, "\(error)")
        }
    }

    /// Serves the mount until its session ends (signals, the control socket, the lifeline, the
    /// inotify echo, systemd), then stops them in order: the echo, the control socket, the
    /// engine (it may still send kernel notifications), the session. Returns the loop's result.
    private static func serve(
        _ session: FuseSession, fileSystem: SyncFileSystem, engine: SyncEngine, locks: MountLocks,
        configuration: MountConfiguration, statePath: String, systemd: SystemdNotifier?, logger: Logger,
        ready: () -> Void
    ) -> Int32 {
        session.prepareSignals()
        let stopper = StopOnSignal.install(session: session, engine: engine, logger: logger)
        MountRegistry.register(mountpoint: configuration.mountpoint)
        MountRecord(configuration).publish()
        defer {
            MountRecord.withdraw(mountpoint: configuration.mountpoint)
            MountRegistry.unregister(mountpoint: configuration.mountpoint)
        }
        let control: ControlServer?
        do {
            control = try ControlServer(mountpoint: configuration.mountpoint, engine: engine, locks: locks)
        } catch {
            logger.warning("no control socket (sync and status will not reach this mount): \(error)")
            control = nil
        }
        if configuration.lifeline { watchLifeline(session, logger: logger) }
        logger.info(
            "mounted \(configuration.container) at \(configuration.mountpoint) as device '\(fileSystem.deviceName)' (state \(statePath))"
        )
        if configuration.inotifyEcho && !configuration.kernelFlags.readOnly {
            fileSystem.echo.channel.start(
                mountpoint: configuration.mountpoint, skipsUnwatchedBursts: !configuration.echoUnwatchedBursts,
                othersMayEnter: configuration.kernelFlags.allowOther
            ) {
                if session.isolateCallingThreadFromDevice() { return true }
                logger.warning("no inotify echo: its thread cannot get a descriptor table of its own")
                return false
            }
        }
        ready()
        systemd?.mountIsLive(session: session, engine: engine, mountpoint: configuration.mountpoint)
        let result = session.run()
        stopper?.sessionEnded()
        systemd?.stopping()
        fileSystem.echo.channel.stop()
        control?.close()
        locks.stop()
        engine.stop()
        session.unmount()
        return result
    }

    private static func checkFuseAvailable() throws(MountError) {
        guard access("/dev/fuse", F_OK) == 0 else {
            throw MountError(.fuseUnavailable, "/dev/fuse does not exist: load the fuse module (modprobe fuse)")
        }
        guard access("/dev/fuse", R_OK | W_OK) == 0 else {
            throw MountError(.permissionDenied, "no permission to open /dev/fuse")
        }
    }

    /// The mount point must be an existing empty directory. A stale mount left by a killed
    /// daemon is detached first.
    static func prepareMountpoint(_ path: String, logger: Logger) throws(MountError) {
        if Unmounter.isStaleMount(path) {
            logger.notice("clearing the stale mount at \(path) left by a daemon that died")
            Unmounter.detach(path)
        }
        if Unmounter.isMounted(path) {
            throw MountError(.busy, "\(path) is already a mount point; unmount it first")
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = errno == ENOENT ? "does not exist (create it with mkdir)" : String(cString: strerror(errno))
            throw MountError(errno == EACCES ? .permissionDenied : .badInput, "mount point \(path) \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw MountError(.badInput, "mount point \(path) is not a directory")
        }
        guard let directory = opendir(path) else {
            throw MountError(.permissionDenied, "cannot read mount point \(path): \(String(cString: strerror(errno)))")
        }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = entry.entryName
            if name != "." && name != ".." {
                throw MountError(.badInput, "mount point \(path) is not empty")
            }
        }
    }

    /// Ends the session when standard input reaches end-of-file.
    private static func watchLifeline(_ session: FuseSession, logger: Logger) {
        // Never stopped: it blocks in read(2) for the daemon's whole life.
        Worker.start("syncfs-lifeline") { _ in
            var byte: UInt8 = 0
            while true {
                let count = read(STDIN_FILENO, &byte, 1)
                if count == 0 || (count < 0 && errno != EINTR) { break }
            }
            logger.info("lifeline closed; unmounting")
            session.exit()
        }
    }

    /// Unmounts `mountpoint` and waits for its daemon to finish committing (at most `timeout`).
    public static func unmount(_ mountpoint: String, timeout: Double = 60) throws(MountError) {
        guard Unmounter.isMounted(mountpoint) else {
            throw MountError(.badInput, "\(mountpoint) is not mounted")
        }
        let daemon = MountRegistry.daemon(of: mountpoint)
        // A mount is often busy for a moment only (an indexer's open, a shell's `cd` that just
        // left, the inotify echo's call): look again for up to 3 s before calling it busy. A poll
        // is right here: the kernel tells no one when a mount stops being busy.
        var result = Unmounter.unmount(mountpoint)
        let busyUntil = Date().addingTimeInterval(3)
        while result == EBUSY && Date() < busyUntil {
            usleep(100_000)
            result = Unmounter.unmount(mountpoint)
        }
        switch result {
        case 0: break
        case EBUSY:
            let users = MountUsers.scan(mountpoint, excluding: daemon.map { [$0] } ?? [])
            throw MountError(.busy, users.busyMessage(mountpoint))
        case EPERM, EACCES: throw MountError(.permissionDenied, "not allowed to unmount \(mountpoint)")
        default: throw MountError(.failed, "cannot unmount \(mountpoint): \(String(cString: strerror(result)))")
        }
        guard let daemon else { return }
        // The daemon finishes its shutdown (the last commits) after the unmount.
        guard ProcessEnd.wait(for: daemon, timeout: timeout) else {
            throw MountError(.failed, "unmounted, but daemon \(daemon) has not finished after \(Int(timeout)) s")
        }
    }
}
