import ArgumentParser
import Foundation
import SyncBackend
import SyncFS
import SyncServer

/// The mount options of the bandwidth limits (doc/CLI.md, `mount`; doc/SEMANTICS.md,
/// "Bandwidth limits").
struct LimitOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Upload at most RATE bytes per second (K, M, G: powers of 1024; kB, MB, GB: powers of 1000; off: no limit).",
            valueName: "rate"))
    var uploadLimit: String = "off"

    @Option(help: ArgumentHelp("Download at most RATE bytes per second (as --upload-limit).", valueName: "rate"))
    var downloadLimit: String = "off"

    @Option(
        help: ArgumentHelp(
            "Other limits in windows of the week: 'Mon-Fri 08:00-18:00 up=1M down=5M; Sat-Sun 00:00-24:00 up=off', local time.",
            valueName: "schedule"))
    var limitSchedule: String = ""

    /// The plain limits; a RATE that is not one is a usage error naming its option.
    func limits() throws -> BandwidthLimits {
        func rate(_ text: String, _ option: String) throws -> BandwidthRate? {
            do { return try BandwidthRate.parse(text) } catch { throw ValidationError("\(option): \(error)") }
        }
        return BandwidthLimits(
            upload: try rate(uploadLimit, "--upload-limit"), download: try rate(downloadLimit, "--download-limit"))
    }

    func schedule() throws -> LimitSchedule {
        do { return try LimitSchedule(parsing: limitSchedule) } catch {
            throw ValidationError("--limit-schedule: \(error)")
        }
    }

    func validate() throws {
        _ = try limits()
        _ = try schedule()
    }

    /// The options again, for the daemon's command line.
    var commandLine: [String] {
        ["--upload-limit", uploadLimit, "--download-limit", downloadLimit, "--limit-schedule", limitSchedule]
    }
}

/// `limit MOUNT [--upload RATE] [--download RATE] [--reset]`: shows or changes the limits of a
/// running mount.
struct LimitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limit",
        abstract: "Show or change the bandwidth limits of a mounted folder while it runs.",
        discussion: """
            MOUNT is the mount point or a path inside the mount. Without options, prints the \
            limits in force and where each comes from. --upload and --download set a limit (a \
            RATE as --upload-limit takes it, or off) that holds over the mount's options and its \
            schedule, is kept in the state database across unmounts and restarts, and lasts until \
            changed or --reset. Transfers already waiting follow the new limit at once. Exit \
            codes: 0 done; 64 a RATE that is not one (nothing changed); 65 MOUNT is not in a \
            SyncFS mount with a running daemon; 77 not allowed.
            """
    )

    @Argument(help: "The mount point of a SyncFS folder, or a path inside it.")
    var mountpoint: String

    @Option(help: ArgumentHelp("The upload limit from now on (a RATE, or off).", valueName: "rate"))
    var upload: String?

    @Option(help: ArgumentHelp("The download limit from now on (a RATE, or off).", valueName: "rate"))
    var download: String?

    @Flag(help: "Forget the limits set by `limit`: the mount's options and schedule apply again.")
    var reset = false

    func validate() throws {
        if let upload {
            do { _ = try BandwidthRate.parse(upload) } catch { throw ValidationError("--upload: \(error)") }
        }
        if let download {
            do { _ = try BandwidthRate.parse(download) } catch { throw ValidationError("--download: \(error)") }
        }
    }

    func run() throws {
        var request = ControlRequest(.limit)
        request.upload = upload
        request.download = download
        request.reset = reset ? true : nil
        let reply: ControlReply
        do {
            let mount = try MountedPath.resolve(mountpoint)
            switch ControlClient.ask(request, mountpoint: mount.mountpoint) {
            case .success(let answer): reply = answer
            case .failure(.unsafe(let reason)): throw MountError(.permissionDenied, reason)
            case .failure(let failure): throw MountError(.badInput, "\(failure)")
            }
        } catch let error as MountError {
            throw fail(error)
        }
        // The daemon's only refusal: a RATE that is not one (nothing changed).
        if let error = reply.error {
            printError("syncfs-mount: \(TerminalText.safe(error))")
            throw ExitCode(.usage)
        }
        guard let bandwidth = reply.status?.bandwidth else {
            throw fail(MountError(.fuseUnavailable, "the mount's daemon is older and has no bandwidth limits"))
        }
        print(BandwidthStatusLine.text(bandwidth, always: true) ?? "")
    }
}

/// The limits' line of `status` (none when nothing limits and no schedule is set) and `limit`.
enum BandwidthStatusLine {
    static func text(_ status: BandwidthStatus?, always: Bool = false) -> String? {
        guard let status else { return nil }
        guard always || status.upload != nil || status.download != nil || status.hasSchedule else { return nil }
        func direction(_ name: String, _ rate: Int64?, _ source: BandwidthSource) -> String {
            let value = rate.flatMap { BandwidthRate(bytesPerSecond: $0) }.map(\.description) ?? "no limit"
            switch source {
            case .option: return "\(name) \(value)"
            case .schedule: return "\(name) \(value) (schedule)"
            case .command: return "\(name) \(value) (set by limit)"
            }
        }
        var line =
            "bandwidth: " + direction("upload", status.upload, status.uploadSource) + ", "
            + direction("download", status.download, status.downloadSource)
        if let entry = status.scheduleEntry {
            line += "; schedule entry in force: \(TerminalText.safe(entry))"
        } else if status.hasSchedule {
            line += "; outside every schedule window"
        }
        return line
    }
}

/// `serve`'s bandwidth limits on chunk bytes (doc/CLI.md, `serve`; doc/SEMANTICS.md, "Bandwidth
/// limits").
struct ServeBandwidthOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Chunk bytes each container's clients may send per second (RATE as mount's --upload-limit; off: none).",
            valueName: "rate"))
    var uploadLimit: String = "off"

    @Option(help: ArgumentHelp("Chunk bytes sent to each container's clients per second.", valueName: "rate"))
    var downloadLimit: String = "off"

    @Option(help: ArgumentHelp("Chunk bytes all clients together may send per second.", valueName: "rate"))
    var totalUploadLimit: String = "off"

    @Option(help: ArgumentHelp("Chunk bytes sent to all clients together per second.", valueName: "rate"))
    var totalDownloadLimit: String = "off"

    func limits() throws -> ServerBandwidthLimits {
        func rate(_ text: String, _ option: String) throws -> BandwidthRate? {
            do { return try BandwidthRate.parse(text) } catch { throw ValidationError("\(option): \(error)") }
        }
        var limits = ServerBandwidthLimits()
        limits.perContainerUpload = try rate(uploadLimit, "--upload-limit")
        limits.perContainerDownload = try rate(downloadLimit, "--download-limit")
        limits.totalUpload = try rate(totalUploadLimit, "--total-upload-limit")
        limits.totalDownload = try rate(totalDownloadLimit, "--total-download-limit")
        return limits
    }

    func validate() throws { _ = try limits() }
}
