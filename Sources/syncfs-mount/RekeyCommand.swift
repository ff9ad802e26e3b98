import ArgumentParser
import Foundation
import SyncBackend
import SyncFS
import SyncSealed

/// `syncfs-mount rekey CONTAINER [--new-epoch]`: re-seals every live entry of an end-to-end
/// encrypted container under the newest key epoch (`SealedContainer.rekey`, doc/CLI.md,
/// doc/CRYPTO.md), run on a member device like the `encryption` commands.
struct RekeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Re-encrypt an encrypted container's files under its newest key epoch.",
        discussion:
            "After `encryption remove`, what was written before is still sealed under keys the removed device holds. "
            + "This re-seals every live file and folder (records and content) under the newest epoch. Older versions "
            + "in history and deleted files stay sealed under their old epochs until retention prunes them. "
            + "Safe to interrupt and run again; an entry another device changes meanwhile is left as that device made it."
    )
    @OptionGroup var place: EncryptedContainerOptions
    @Flag(help: "Start a new key epoch first (for all current members), then re-seal everything under it.")
    var newEpoch = false

    func run() throws {
        do throws(MountError) {
            let (sealed, _) = try place.open()
            let newEpoch = self.newEpoch
            let report = try blockOnResult { () async throws(ContainerProtocolError) in
                try await sealed.rekey(newEpoch: newEpoch) { progress in
                    printError(
                        "syncfs-mount: re-sealed \(HumanUnits.count(progress.entries, "entry", "entries")) so far, "
                            + "\(HumanUnits.bytes(progress.bytes)) of content")
                }
            }
            for line in Self.summary(report) { print(line) }
        } catch {
            throw fail(error)
        }
    }

    /// What the run did, and what it leaves sealed under older epochs.
    static func summary(_ report: RekeyReport) -> [String] {
        var lines: [String] = []
        if report.startedEpoch { lines.append("Started key epoch \(report.epoch) for the current members") }
        lines.append(
            "Re-sealed \(HumanUnits.count(report.entries, "entry", "entries")) and "
                + "\(HumanUnits.count(report.chunks, "chunk")) (\(HumanUnits.bytes(report.bytes))) "
                + "under key epoch \(report.epoch)")
        if report.remaining > 0 {
            lines.append(
                "\(HumanUnits.count(report.remaining, "entry", "entries")) changed on another device meanwhile "
                    + "and still sealed under an older epoch: run rekey again")
        } else {
            lines.append("Every live file and folder is sealed under key epoch \(report.epoch)")
        }
        var old = "Older versions in history"
        if report.oldTombstones > 0 {
            old += " and \(HumanUnits.count(report.oldTombstones, "deleted entry", "deleted entries")) in the trash"
        }
        lines.append(
            old + " stay sealed under their old epochs until retention prunes them: a removed device that kept "
                + "its keys can still read those versions from before its removal, and nothing else")
        return lines
    }
}
