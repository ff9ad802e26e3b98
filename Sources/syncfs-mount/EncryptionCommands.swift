import ArgumentParser
import Foundation
import Logging
import SyncBackend
import SyncClient
import SyncFS
import SyncSealed
import Synchronization

/// `syncfs-mount encryption devices|approve|remove CONTAINER`: the member devices of an
/// end-to-end encrypted container, run on a member device (doc/CLI.md, doc/CRYPTO.md).
struct EncryptionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encryption",
        abstract: "Manage the devices of an end-to-end encrypted container.",
        subcommands: [Devices.self, Approve.self, Remove.self]
    )

    /// `encryption devices CONTAINER`: the members, the recovery key, and the devices that asked
    /// to join with their safety codes.
    struct Devices: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the member devices and the devices that ask to join, with their safety codes.")
        @OptionGroup var place: EncryptedContainerOptions

        func run() throws {
            do throws(MountError) {
                let (sealed, device) = try place.open()
                let (members, recovery, requests) = try blockOnResult { () async throws(ContainerProtocolError) in
                    let members = try await sealed.members()
                    return (members.devices, members.recovery, try await sealed.joinRequests())
                }
                for member in members {
                    print("member   \(member)\(member == device.identity ? "  (this device)" : "")")
                }
                print("recovery \(recovery)")
                for (request, code) in requests {
                    print("asks     \(request.device)  \(TerminalText.safe(request.name))  safety code: \(code)")
                }
            } catch {
                throw fail(error)
            }
        }
    }

    /// `encryption approve CONTAINER CODE…`: admits the device whose safety code is CODE, after
    /// its owner saw the same code on that device.
    struct Approve: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Admit the device that asks to join with this safety code (all 30 digits, as both devices show it).")
        @OptionGroup var place: EncryptedContainerOptions
        @Argument(help: "The safety code, in its groups or not.") var code: [String]

        func run() throws {
            do throws(MountError) {
                let wanted = code.joined().filter(\.isNumber)
                guard wanted.count == 30 else {
                    throw MountError(.badInput, "a safety code has 30 digits (six groups of five); give all of them")
                }
                let (sealed, _) = try place.open()
                let requests = try blockOnResult { () async throws(ContainerProtocolError) in
                    try await sealed.joinRequests()
                }
                guard let match = requests.first(where: { $0.code.filter(\.isNumber) == wanted }) else {
                    throw MountError(.badInput, "no device asks to join with that safety code; nothing was changed")
                }
                let admission = try blockOnResult { () async throws(ContainerProtocolError) in
                    try await sealed.approve(match.request)
                }
                print(
                    "Admitted \(match.request.device) (\(match.request.name)). On that device, mount with "
                        + "--admission-code '\(admission)' (once: it confirms that device sees this very admission)")
            } catch {
                throw fail(error)
            }
        }
    }

    /// `encryption remove CONTAINER DEVICE`: removes a member and starts a new key epoch.
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a member device: nothing written from now on can be read by it.",
            discussion:
                "DEVICE is the start of its key as `encryption devices` shows it (at least 8 hex digits). Revoke its server token too."
        )
        @OptionGroup var place: EncryptedContainerOptions
        @Argument(help: "The device, as `encryption devices` shows it.") var device: String

        func run() throws {
            do throws(MountError) {
                let prefix = device.lowercased()
                guard prefix.count >= 8, prefix.allSatisfy(\.isHexDigit) else {
                    throw MountError(.badInput, "give at least 8 hex digits of the device's key")
                }
                let (sealed, this) = try place.open()
                let members = try blockOnResult { () async throws(ContainerProtocolError) in try await sealed.members()
                }
                let matches = members.devices.filter { $0.signingHex.hasPrefix(prefix) }
                guard matches.count == 1, let member = matches.first else {
                    throw MountError(
                        .badInput,
                        matches.isEmpty ? "no member device starts with \(prefix)" : "\(prefix) names several devices")
                }
                guard member != this.identity else { throw MountError(.badInput, "a device does not remove itself") }
                try blockOnResult { () async throws(ContainerProtocolError) in try await sealed.remove(member.signing) }
                print("Removed \(member); a new key epoch started")
            } catch {
                throw fail(error)
            }
        }
    }
}

/// Where an encrypted container is and how to reach it, for `encryption`'s commands and `rekey`.
struct EncryptedContainerOptions: ParsableArguments {
    @Argument(help: "The container: a local path or a server URL, as for `mount`.") var container: String
    @Option(help: ArgumentHelp("For a server URL: the file holding the access token.", valueName: "file"))
    var tokenFile: String?
    @Option(help: ArgumentHelp("For an https URL: trust only the certificates in this PEM file.", valueName: "file"))
    var caFile: String?
    @Option(
        help: ArgumentHelp(
            "The file holding this device's private keys (default: $XDG_STATE_HOME/syncfs/device-key).",
            valueName: "file"))
    var deviceKey: String?
    @Option(
        help: ArgumentHelp(
            "For a device admitted by approval that has not confirmed its admission yet: the admission code `encryption approve` printed.",
            valueName: "code"))
    var admissionCode: String?

    /// The sealed container, opened as this device (which must be a member).
    func open() throws(MountError) -> (SealedContainer, DeviceKeys) {
        let location = ServerAddress.looksLikeURL(container) ? container : absolutePath(container)
        let scratch: String
        do {
            scratch = try makeScratchDirectory()
        } catch {
            throw MountError(.cannotCreate, "cannot make a scratch directory: \(error)")
        }
        defer {
            do {
                try FileManager.default.removeItem(atPath: scratch)
            } catch {
                printError("syncfs-mount: warning: cannot remove the scratch directory \(scratch): \(error)")
            }
        }
        var configuration = MountConfiguration(
            container: location, mountpoint: scratch, stateDirectory: scratch, lifeline: false)
        configuration.deviceKeyFile = deviceKey.map(absolutePath)
        let inner = try MountContainer.open(
            location, recordedID: nil, recordedPath: nil, stateDirectory: scratch,
            tokenFile: (tokenFile ?? LoginTokenFile.existing(for: container)).map(absolutePath),
            caFile: caFile.map(absolutePath), logger: Logger(label: "syncfs-mount"))
        let device = try SealedMounting.deviceKeys(configuration)
        // From the newest head this device kept of the container (its mounts keep it): a server
        // cannot show these commands another container, or an older state of this one.
        let keyPath = SealedMounting.deviceKeyPath(configuration)
        let containerID = inner.containerID
        let known: LedgerHead?
        do {
            known = try KnownHeads.read(for: containerID, deviceKey: keyPath)
        } catch {
            throw MountError(.badInput, error.description)
        }
        // A container this device never saw encrypted, with no ledger: plain (a container it knew
        // encrypted and now shows none is a rollback, which the wrapper reports).
        if known == nil, try !SealedMounting.isSealed(inner) {
            throw MountError(
                .badInput,
                "\(container) is not an encrypted container (or its server hides that it is); nothing was changed")
        }
        // Heads are kept only once the admission is confirmed (a made-up copy's head must not
        // lock this device out of the real container).
        let confirmed = Mutex(false)
        let sealed = try blockOnResult { () async throws(ContainerProtocolError) in
            try await SealedContainer.open(inner, as: device, knownHead: known) { head in
                guard confirmed.withLock({ $0 }) else { return }
                do {
                    try KnownHeads.write(head, for: containerID, deviceKey: keyPath)
                } catch {
                    printError("syncfs-mount: warning: cannot keep the ledger head: \(error)")
                }
            }
        }
        // A device admitted by approval acts only once its owner confirmed the admission.
        try SealedMounting.confirmAdmission(
            of: device, in: sealed, keyPath: keyPath, code: admissionCode, byRecovery: false)
        confirmed.withLock { $0 = true }
        if let head = sealed.head {
            do {
                try KnownHeads.write(head, for: containerID, deviceKey: keyPath)
            } catch {
                printError("syncfs-mount: warning: cannot keep the ledger head: \(error)")
            }
        }
        return (sealed, device)
    }

    private func makeScratchDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/syncfs-encryption-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw MountError(.cannotCreate, String(cString: strerror(errno)))
        }
        return String(cString: made)
    }
}

/// Runs `work` to its end from synchronous code, its container error kept as a value.
func blockOnContainer<T: Sendable>(
    _ work: @escaping @Sendable () async throws(ContainerProtocolError) -> T
) -> Result<T, ContainerProtocolError> {
    blockOn { () -> Result<T, ContainerProtocolError> in
        do throws(ContainerProtocolError) {
            return .success(try await work())
        } catch {
            return .failure(error)
        }
    }
}

/// Runs `work` to its end from synchronous code; its container error becomes a `MountError`.
func blockOnResult<T: Sendable>(
    _ work: @escaping @Sendable () async throws(ContainerProtocolError) -> T
) throws(MountError) -> T {
    switch blockOnContainer(work) {
    case .success(let value): return value
    case .failure(let error):
        throw MountError(error.isRetryable ? .unreachable : .badInput, "the encrypted container: \(error)")
    }
}
