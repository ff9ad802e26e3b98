import ArgumentParser
import Foundation
import Glibc
import Logging
import SyncBackend
import SyncClient
import SyncFS
import SyncObservability

struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount CONTAINER as an ordinary folder at MOUNTPOINT.",
        discussion: """
            CONTAINER is a local container directory (made by `syncfs-mount init`, or by --create) \
            or a container on a sync server, https://HOST:PORT/NAME (with --token-file). A local \
            path that is not a container is refused (exit 65) and nothing is created. \
            MOUNTPOINT must be an existing empty directory; a stale mount left by a killed daemon \
            is cleared first. Without --foreground the command returns once the mount is live and \
            the daemon logs to STATE_DIR/syncfs.log.
            """
    )

    @Argument(
        help:
            "The container: a local container directory, or https://HOST:PORT/NAME (several servers of one container: URL,URL…)."
    )
    var container: String

    @Argument(help: "An existing, empty directory to mount the folder on.")
    var mountpoint: String

    @Option(
        help: ArgumentHelp(
            "Where the cache and the state database live.",
            discussion:
                "Default: $XDG_STATE_HOME/syncfs/<name>-<hash> (or ~/.local/state/syncfs/…; /var/lib/syncfs/… for root), one per container and mount point.",
            valueName: "dir"))
    var stateDir: String?

    @Flag(
        help:
            "Make a new, empty local container at CONTAINER if none is there (a missing path or an empty directory whose parent exists)."
    )
    var create = false

    @Flag(
        help: ArgumentHelp(
            "The container must be end-to-end encrypted: refuse it if it is not.",
            discussion:
                "Give it on the first mount of an encrypted container from a new device, so that a server cannot pass it off as a plain one (later mounts remember)."
        ))
    var encrypted = false

    @Flag(
        help: ArgumentHelp(
            "Make CONTAINER an end-to-end encrypted container with this device as its first member, and show its recovery key once.",
            discussion:
                "A local CONTAINER is made as with --create; a server container must exist and be empty."))
    var createEncrypted = false

    @Option(
        help: ArgumentHelp(
            "The file holding this device's private keys for encrypted containers (made 0600 if missing).",
            discussion: "Default: $XDG_STATE_HOME/syncfs/device-key (or ~/.local/state/…; /var/lib/syncfs/… for root).",
            valueName: "file"))
    var deviceKey: String?

    @Option(
        help: ArgumentHelp(
            "On the first mount of an encrypted container this device is not a member of: join with the recovery key in this file (mode 0600).",
            valueName: "file"))
    var recoveryKeyFile: String?

    @Option(
        help: ArgumentHelp(
            "On the first mount of an encrypted container after this device was admitted by approval: the admission code `encryption approve` printed on the approving device.",
            valueName: "code"))
    var admissionCode: String?

    @Flag(help: "Stay in the foreground; print the line 'ready' on standard output once the mount is live.")
    var foreground = false

    @Flag(help: "With --foreground: unmount and exit when standard input reaches end-of-file (for test runners).")
    var lifeline = false

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @OptionGroup(title: "Logs and metrics")
    var observability: ObservabilityOptions

    @Option(help: "Milliseconds a changed file must stay closed and unchanged before it is uploaded.")
    var uploadDelay: Int = 100

    @Option(help: "zlib level for uploaded chunks, 0 (store) to 9 (smallest).")
    var compressionLevel: Int = 1

    @Option(
        help: ArgumentHelp(
            "Budget for downloaded and modified content: bytes with kB/MB/GB/TB (powers of 1000) or K/M/G/T, KiB/MiB/GiB/TiB (powers of 1024), or a percentage of the state directory's filesystem.",
            valueName: "size"))
    var cacheSize: String = "25%"

    @Option(
        help: ArgumentHelp(
            "Comma-separated process names (as in /proc/PID/comm) whose reads never start a download: they get EACCES for content not downloaded yet.",
            valueName: "names"))
    var noDownloadFor: String = ""

    @Option(
        help: ArgumentHelp(
            "First mount of a state directory: seconds to wait for a container that does not answer before failing (exit 75).",
            discussion:
                "A first mount is live only once the container's tree is attached; a moving attach has no limit.",
            valueName: "seconds"))
    var attachTimeout: Double = 30

    /// Set by `startInBackground`: the daemon writes `attaching N` lines before `ready`.
    @Flag(help: .hidden)
    var reportAttachProgress = false

    @Option(help: ArgumentHelp("For a server URL: the file holding the access token.", valueName: "file"))
    var tokenFile: String?

    @Option(
        help: ArgumentHelp(
            "For an https URL: trust only the certificates in this PEM file (a self-signed server).",
            valueName: "file"))
    var caFile: String?

    @Option(
        help: ArgumentHelp(
            "The name conflict copies give this mount (printable, at most 64 bytes, no '/'); kept for later mounts.",
            discussion:
                "Default, chosen at the first mount: the host name and a short stable suffix, e.g. laptop-3f2a.",
            valueName: "name"))
    var deviceName: String?

    @Flag(help: "Do not replay remote changes through the mount point (inotify watchers then miss them).")
    var noInotifyEcho = false

    @Flag(
        help:
            "Replay bursts of remote changes through the mount point even when no process seems to watch it (for watchers this daemon cannot see, in another PID namespace)."
    )
    var inotifyEchoAlways = false

    @Flag(
        help:
            "Keep flock and fcntl locks on this mount only, as the kernel does for a local disk (no round trip to the daemon on each close); other mounts of the container do not see them."
    )
    var localLocks = false

    @Flag(
        help:
            "Root only: keep the setuid and setgid bits of files other machines made, and let them take effect (the folder is nosuid,nodev otherwise). Only for a container whose every writer you trust."
    )
    var allowRemoteSetuid = false

    @Flag(
        help: "Read-only: the kernel refuses every change (EROFS) and so does the daemon; remote changes still appear.")
    var readOnly = false

    @Flag(
        help:
            "Let other users use the folder (FUSE allow_other; the kernel checks file modes). Root's mounts always do; other users need user_allow_other in /etc/fuse.conf."
    )
    var allowOther = false

    @Flag(help: "Programs in the folder cannot be executed (the mount is noexec).")
    var noExec = false

    @Option(
        help: ArgumentHelp(
            "The local file defining the merge commands this machine allows (merge=command:NAME in .syncfs-rules).",
            discussion:
                "Default: /etc/syncfs/merge-commands for root, else $XDG_CONFIG_HOME/syncfs/merge-commands (or ~/.config/…).",
            valueName: "file"))
    var mergeCommands: String?

    @OptionGroup(title: "Mass-delete guard")
    var guardOptions: GuardOptions

    @OptionGroup(title: "Ignore patterns")
    var ignoreOptions: IgnoreMountOptions
    @OptionGroup(title: "Bandwidth limits")
    var limitOptions: LimitOptions

    func validate() throws {
        if let missingScheme = MissingScheme.message(container, serverOptionGiven: tokenFile != nil || caFile != nil) {
            printError("syncfs-mount: \(missingScheme)")
            throw ExitCode(.usage)
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError(
                "unknown log level '\(logLevel)'; use trace, debug, info, notice, warning, error or critical")
        }
        if lifeline && !foreground { throw ValidationError("--lifeline needs --foreground") }
        if lifeline, let problem = Lifeline.problemAtStart() { throw problem }
        if ServerAddress.looksLikeURL(container) {
            do { _ = try ServerList(parsing: container) } catch { throw ValidationError(error.description) }
            if create {
                throw ValidationError(
                    "--create is for a local container; a server's containers are made by `syncfs-mount token create`")
            }
            guard tokenFile != nil || LoginTokenFile.existing(for: container) != nil else {
                throw ValidationError(
                    "a server URL needs `syncfs-mount login \(container) --user NAME` first, or --token-file FILE "
                        + "(made by `syncfs-mount token create`)")
            }
        } else if tokenFile != nil || caFile != nil {
            throw ValidationError("--token-file and --ca-file are only for a server URL (https://HOST:PORT/NAME)")
        }
        guard (0...3_600_000).contains(uploadDelay) else {
            throw ValidationError("--upload-delay must be between 0 and 3600000 milliseconds")
        }
        guard attachTimeout >= 1 && attachTimeout <= 86_400 else {
            throw ValidationError("--attach-timeout must be between 1 and 86400 seconds")
        }
        guard (0...9).contains(compressionLevel) else { throw ValidationError("--compression-level must be 0...9") }
        for name in noDownloadFor.split(separator: ",") where name.trimmingCharacters(in: .whitespaces).count > 15 {
            throw ValidationError(
                "--no-download-for: '\(name)' is longer than 15 characters; Linux shortens process names "
                    + "(/proc/PID/comm) to 15, so give the first 15")
        }
        if let deviceName, let problem = DeviceName.problem(deviceName) {
            throw ValidationError("--device-name: \(problem)")
        }
        guard CacheSize(parsing: cacheSize) != nil else {
            throw ValidationError(
                "--cache-size must be a size such as 500MB, 20GB, 20GiB or 25% (got '\(cacheSize)')")
        }
    }

    /// The container as the daemon gets it: a server URL normalised (`https://host:port/NAME`,
    /// so `…/NAME/` and `…/name` spellings of the host share a state directory), a local path
    /// made absolute.
    private var containerLocation: String {
        guard ServerAddress.looksLikeURL(container) else { return absolutePath(container) }
        return (try? ServerList(parsing: container))?.description ?? container
    }

    /// What the default state directory is keyed by: the container, or the first of several
    /// servers (so adding a fallback server keeps the state directory).
    private var stateKey: String {
        guard ServerAddress.looksLikeURL(container) else { return containerLocation }
        return (try? ServerList(parsing: container))?.primary.description ?? containerLocation
    }

    func run() throws {
        if allowRemoteSetuid && geteuid() != 0 {
            throw fail(
                MountError(
                    .permissionDenied,
                    "--allow-remote-setuid is for root only: the kernel mounts another user's FUSE folder "
                        + "nosuid,nodev whatever is asked (fusermount3); nothing was mounted"))
        }
        var configuration = MountConfiguration(
            container: containerLocation, mountpoint: absolutePath(mountpoint),
            stateDirectory: absolutePath(
                stateDir
                    ?? StateDirectory.defaultPath(container: stateKey, mountpoint: absolutePath(mountpoint))),
            lifeline: lifeline)
        configuration.tokenFile = (tokenFile ?? LoginTokenFile.existing(for: container)).map(absolutePath)
        configuration.createContainer = create || createEncrypted
        configuration.encrypted = encrypted || createEncrypted
        configuration.deviceKeyFile = deviceKey.map(absolutePath)
        configuration.recoveryKeyFile = recoveryKeyFile.map(absolutePath)
        configuration.admissionCode = admissionCode
        do {
            try checkPlacement(configuration)
            try ContainerCreation.checkBeforeMount(
                configuration.container, create: configuration.createContainer,
                stateDirectory: configuration.stateDirectory)
            if createEncrypted { try makeEncrypted(configuration) }
        } catch {
            throw fail(error)
        }
        noticeChangesWaitingElsewhere(container: configuration.container, stateDirectory: configuration.stateDirectory)
        configuration.caFile = caFile.map(absolutePath)
        configuration.uploadDelayMilliseconds = uploadDelay
        configuration.compressionLevel = Int32(compressionLevel)
        configuration.cacheSize = CacheSize(parsing: cacheSize) ?? .percentOfFilesystem(25)
        configuration.inotifyEcho = !noInotifyEcho
        configuration.echoUnwatchedBursts = inotifyEchoAlways
        configuration.locksAcrossMounts = !localLocks
        configuration.deviceName = deviceName.flatMap(DeviceName.init(validating:))
        configuration.allowRemoteSetuid = allowRemoteSetuid
        configuration.attachTimeout = attachTimeout
        configuration.reportAttachProgress = reportAttachProgress
        configuration.kernelFlags = MountKernelFlags(readOnly: readOnly, allowOther: allowOther, noExec: noExec)
        configuration.noDownloadProcesses = Set(
            noDownloadFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        configuration.deleteGuard = guardOptions.thresholds
        configuration.bandwidthLimits = try limitOptions.limits()
        configuration.limitSchedule = try limitOptions.schedule()
        if let lease = TestHooks.lockLease() { configuration.lockLeaseSeconds = lease }
        configuration.mergeCommandsFile =
            mergeCommands.map(absolutePath)
            ?? LocalMergeCommands.defaultPath(environment: ProcessInfo.processInfo.environment)
        if mergeCommands != nil, let file = configuration.mergeCommandsFile,
            let problem = LocalMergeCommands(path: file, mountpoint: configuration.mountpoint).problem()
        {
            throw fail(MountError(.badInput, "--merge-commands: \(problem)"))
        }
        configuration.ignores = ignoreOptions.options(absolute: absolutePath)
        if case .failure(let problem) = configuration.ignores.readLocalFile(mountpoint: configuration.mountpoint) {
            throw fail(MountError(.badInput, "--ignore-file: \(problem.message)"))
        }
        if foreground {
            try runForeground(configuration)
        } else {
            try startInBackground(configuration)
        }
    }

    /// Before anything is made: a container is never mounted inside one of its own mounts (the
    /// folder would hold itself; at that mount's own mount point is a remount, after a crash), and
    /// `--create` never makes one inside a SyncFS folder.
    private func checkPlacement(_ configuration: MountConfiguration) throws(MountError) {
        let mounts = SyncFSMounts.current()
        if let outer = mounts.enclosing(configuration.mountpoint), outer.mountpoint != configuration.mountpoint,
            outer.holds(configuration.container)
        {
            throw MountError(
                .badInput,
                "\(configuration.mountpoint) is inside \(outer.mountpoint), a mount of the same container: the "
                    + "folder would hold itself; mount it outside that folder")
        }
        if create && !ServerAddress.looksLikeURL(configuration.container) {
            try ContainerCreation.checkOutsideSyncFSFolders(configuration.container)
        }
    }

    private func runForeground(_ configuration: MountConfiguration) throws {
        observability.bootstrapLogging(level: Logger.Level(rawValue: logLevel) ?? .info)
        let logger = Logger(label: "syncfs")
        var configuration = configuration
        let endpoint: MetricsEndpoint?
        do {
            endpoint = try observability.startMetrics(logger: logger, buckets: MountMetrics.buckets) {
                let metrics = MountMetrics()
                configuration.metrics = metrics
                return { metrics.sample() }
            }
        } catch {
            throw fail(MountError(.badInput, "\(error)"))
        }
        defer { endpoint?.stop() }
        do {
            try MountDaemon.run(
                configuration, openContainer: MountContainer.opener(configuration, logger: logger), logger: logger
            ) {
                // The readiness signal for scripts: one line on standard output, written unbuffered.
                _ = write(STDOUT_FILENO, "ready\n", 6)
            }
        } catch {
            throw fail(error)
        }
    }

    /// `--create-encrypted`: on the state directory's first mount, makes the container (local:
    /// as `--create` does; a server's: it must be empty) encrypted, and shows the recovery key.
    /// A container that is already encrypted is left as it is (a repeated command).
    private func makeEncrypted(_ configuration: MountConfiguration) throws(MountError) {
        let databasePath = StateDirectory(path: configuration.stateDirectory).databasePath
        guard StateDatabaseReader.summary(databasePath: databasePath)?.fact(.containerID) == nil else { return }
        if !ServerAddress.looksLikeURL(configuration.container) {
            try ContainerCreation.checkOutsideSyncFSFolders(configuration.container)
        }
        let container = try MountContainer.open(
            configuration.container, recordedID: nil, recordedPath: nil, stateDirectory: configuration.stateDirectory,
            create: true, tokenFile: configuration.tokenFile, caFile: configuration.caFile,
            logger: Logger(label: "syncfs-mount"))
        guard try !SealedMounting.isSealed(container) else { return }
        let recovery = try SealedMounting.create(container, deviceKeyFile: configuration.deviceKeyFile)
        print(SealedMounting.recoveryNotice(recovery))
    }

    /// Starts this program again with `--foreground` as a daemon in its own session, logging to
    /// the state directory, and waits for its `ready` line (or its failure).
    private func startInBackground(_ configuration: MountConfiguration) throws {
        let state = StateDirectory(path: configuration.stateDirectory)
        do { try state.create() } catch { throw fail(error) }
        // The daemon's standard error is its log: warn here too, where the person is.
        let tokenWarning = configuration.tokenFile.flatMap(ServerContainer.tokenFileWarning)
        if let tokenWarning { printError("syncfs-mount: warning: \(tokenWarning)") }
        let logOffset = (try? FileManager.default.attributesOfItem(atPath: state.logPath)[.size] as? Int) ?? 0
        var arguments = [
            "mount", configuration.container, configuration.mountpoint, "--state-dir", configuration.stateDirectory,
            "--foreground", "--log-level", logLevel, "--upload-delay", String(uploadDelay),
            "--compression-level", String(compressionLevel), "--cache-size", cacheSize, "--no-download-for",
            noDownloadFor, "--attach-timeout", String(attachTimeout), "--report-attach-progress",
        ]
        if noInotifyEcho { arguments.append("--no-inotify-echo") }
        if inotifyEchoAlways { arguments.append("--inotify-echo-always") }
        if localLocks { arguments.append("--local-locks") }
        // A server's container exists already (`--create-encrypted` sealed it above): `--create`
        // is for a local one only, and the daemon would refuse it for a URL.
        if configuration.createContainer && !ServerAddress.looksLikeURL(configuration.container) {
            arguments.append("--create")
        }
        if configuration.encrypted { arguments.append("--encrypted") }
        if let file = configuration.deviceKeyFile { arguments += ["--device-key", file] }
        if let file = configuration.recoveryKeyFile { arguments += ["--recovery-key-file", file] }
        if let code = configuration.admissionCode { arguments += ["--admission-code", code] }
        if let deviceName { arguments += ["--device-name", deviceName] }
        if allowRemoteSetuid { arguments.append("--allow-remote-setuid") }
        arguments += configuration.kernelFlags.commandLine
        arguments += guardOptions.commandLine
        arguments += limitOptions.commandLine
        arguments += observability.commandLine
        if let tokenFile = configuration.tokenFile { arguments += ["--token-file", tokenFile] }
        if let caFile = configuration.caFile { arguments += ["--ca-file", caFile] }
        if mergeCommands != nil, let file = configuration.mergeCommandsFile { arguments += ["--merge-commands", file] }
        arguments += ignoreOptions.commandLine(file: configuration.ignores.file)
        let daemon: DaemonProcess
        do {
            daemon = try DaemonProcess.spawn(arguments: arguments, logPath: state.logPath)
        } catch {
            throw fail(MountError(.failed, "cannot start the daemon: \(error)"))
        }
        let progress = AttachProgressDisplay.onStandardError()
        let ready = daemon.waitUntilReady { progress?.show(entries: $0) }
        progress?.finish()
        if ready {
            print("Mounted \(configuration.container) at \(configuration.mountpoint) (log: \(state.logPath))")
            return
        }
        let status = daemon.waitForExit()
        let log = (try? String(contentsOfFile: state.logPath, encoding: .utf8)) ?? ""
        let tail = String(log.utf8.dropFirst(logOffset)) ?? ""
        for line in tail.split(separator: "\n") where !(tokenWarning.map(line.contains) ?? false) {
            printError(String(line))
        }
        throw ExitCode(status == 0 ? ExitStatus.failure.rawValue : status)
    }
}
