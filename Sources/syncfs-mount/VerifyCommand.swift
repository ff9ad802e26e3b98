import ArgumentParser
import Foundation
import SyncFS

/// `verify MOUNT [--json]`: checks the mount's tree against its container now and corrects it
/// (doc/CLI.md; doc/SECURITY.md, "Several servers").
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check that the mount's tree is the container's, and correct it if not.",
        discussion: """
            MOUNT is the mount point or a path inside the mount. The daemon compares a digest of \
            the entries it applied with the container's; on a difference it reads the container's \
            change feed whole, removes here what the container has never held (nothing of it is \
            uploaded) and brings back what is missing, and prints what it corrected. Exit codes: 0 \
            the tree is the container's (after corrections, if any: printed); 65 MOUNT is not in \
            a SyncFS mount with a running daemon; 75 the container did not answer, or some entries \
            still differ (listed; run verify again); 77 not allowed.
            """
    )

    @Argument(help: "The mount point of a SyncFS folder, or a path inside it.")
    var mountpoint: String

    @Flag(help: "Print the report as JSON.")
    var json = false

    func run() throws {
        let report: TreeCheckReport
        do {
            let mount = try MountedPath.resolve(mountpoint)
            switch ControlClient.ask(ControlRequest(.verify), mountpoint: mount.mountpoint) {
            case .success(let reply):
                if let error = reply.error { throw MountError(.busy, TerminalText.safe(error)) }
                guard let answered = reply.treeCheck else {
                    throw MountError(.busy, "the daemon does not know verify (an older daemon?); remount")
                }
                report = answered
            case .failure(.unsafe(let reason)): throw MountError(.permissionDenied, reason)
            case .failure(let failure): throw MountError(.badInput, "\(failure)")
            }
        } catch let error as MountError {
            throw fail(error)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: (try? encoder.encode(report)) ?? Data(), as: UTF8.self))
        } else {
            print(TerminalText.safe(report.summary))
        }
        if !report.isConsistent { throw ExitCode(.temporaryFailure) }
    }
}
