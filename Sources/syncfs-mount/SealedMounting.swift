import Foundation
import Logging
import SyncBackend
import SyncFS
import SyncSealed
import Synchronization

/// Whether a mount's container is sealed (end-to-end encrypted), and the wrapper when it is
/// (doc/CRYPTO.md):
/// - a state directory whose database records the container as sealed, or that keeps a ledger
///   head (`SealedHeadFile`), belongs to a sealed container: it is wrapped at once, even offline
///   (the wrapper reads and checks the ledger when the container answers);
/// - a state directory's first mount looks for the container's genesis: found, the container is
///   sealed and this device must be a member (its head is kept before the mount goes on); not
///   found, it is plain — unless the mount asked for a sealed one (`--encrypted`), which is then
///   refused, so that a server cannot hide the ledger from a new device and be sent plaintext;
/// - every later mount of a directory recorded as plain (or, older, without a head file) is plain.
enum SealedMounting {
    static func wrap(
        _ container: any Container, recorded: RecordedContainer, configuration: MountConfiguration, logger: Logger
    ) throws(MountError) -> any Container {
        let firstMount = recorded.id == nil
        let headPath = configuration.stateDirectory + "/" + SealedHeadFile.name
        let keyPath = deviceKeyPath(configuration)
        let containerID = container.containerID
        let known: LedgerHead?
        let deviceKnows: LedgerHead?
        do {
            known = try SealedHeadFile.read(headPath)
            deviceKnows = try KnownHeads.read(for: containerID, deviceKey: keyPath)
        } catch {
            throw MountError(.badInput, error.description)
        }
        // The head this mount kept, and the one this device kept (another mount, the command that
        // made the container): the newer one is where the ledger must reach, through its digest.
        let keeper = HeadKeeper(logger: logger) { head in
            try SealedHeadFile.write(head, to: headPath)
            try KnownHeads.write(head, for: containerID, deviceKey: keyPath)
        }
        let keepHead: @Sendable (LedgerHead) -> Void = { head in keeper.keep(head) }
        // A first mount keeps no head until this device is a member whose admission its owner
        // confirmed: a head of a copy the server made up must not lock the device out of the
        // real one, and the state directory's head file says later mounts may go on without asking.
        let confirmed = Mutex(false)
        let keepConfirmedHead: @Sendable (LedgerHead) -> Void = { head in
            if confirmed.withLock({ $0 }) { keepHead(head) }
        }
        if known != nil || recorded.sealed == true {
            if known == nil {
                logger.warning(
                    "the state directory records an encrypted container but keeps no ledger head; this device's own record of it is used"
                )
            }
            // The key this directory's mounts used: a missing one is not made anew (a new key is
            // no member, and its empty view of the container must never reach the engine).
            return SealedContainer(
                wrapping: container, as: try existingDeviceKeys(configuration),
                knownHead: KnownHeads.newer(known, deviceKnows), onHead: keepHead)
        }
        guard firstMount else {
            if deviceKnows != nil {
                throw MountError(
                    .badInput,
                    "this state directory mounted \(configuration.container) as a plain container, but this device "
                        + "knows it as encrypted (its server may have hidden that at the first mount); nothing was "
                        + "mounted. Mount it with a new state directory")
            }
            if configuration.encrypted {
                throw MountError(
                    .badInput, "this mount's container was mounted as a plain container before; it is not encrypted")
            }
            return container
        }
        // A container this device knows to be sealed is sealed, whatever the server shows now.
        guard try isSealed(container, within: configuration.attachTimeout) else {
            if deviceKnows != nil {
                throw MountError(
                    .badInput,
                    "this device knows \(configuration.container) as an encrypted container, but the server shows no "
                        + "ledger for it (it may be hiding it); nothing was mounted")
            }
            if configuration.encrypted {
                throw MountError(
                    .badInput,
                    "\(configuration.container) is not an encrypted container (or its server hides that it is); "
                        + "nothing was mounted. Make a new one with --create-encrypted")
            }
            return container
        }
        let device = try deviceKeys(configuration)
        let recovery = try configuration.recoveryKeyFile.map { (path: String) throws(MountError) -> RecoveryKey in
            try recoveryKey(path)
        }
        let opened = blockOnContainer { () async throws(ContainerProtocolError) -> SealedContainer? in
            if let recovery {
                return try await SealedContainer.joinWithRecovery(
                    container, recovery: recovery, device: device, knownHead: deviceKnows, onHead: keepConfirmedHead)
            }
            let sealed = SealedContainer(
                wrapping: container, as: device, knownHead: deviceKnows, onHead: keepConfirmedHead)
            return try await sealed.isMember() ? sealed : nil
        }
        switch opened {
        case .success(let sealed?):
            // A device the recovery key admitted admitted itself; one admitted by approval shows
            // its owner's confirmation (the admission code) first.
            try confirmAdmission(
                of: device, in: sealed, keyPath: keyPath, code: configuration.admissionCode,
                byRecovery: recovery != nil)
            // Kept before the mount goes on: the head file, with the database's record, is what
            // makes every later mount wrap the container.
            confirmed.withLock { $0 = true }
            if let head = sealed.head {
                do {
                    try SealedHeadFile.write(head, to: headPath)
                    try KnownHeads.write(head, for: containerID, deviceKey: keyPath)
                } catch {
                    throw MountError(.cannotCreate, "cannot keep the encrypted container's ledger head: \(error)")
                }
            }
            logger.notice(
                "the container is encrypted; this device is a member (ledger entry \(sealed.head?.sequence ?? 0))")
            return sealed
        case .success(nil):
            let asked = blockOnContainer { () async throws(ContainerProtocolError) in
                return try await SealedContainer.requestToJoin(
                    container, as: device,
                    name: configuration.deviceName?.text ?? ProcessInfo.processInfo.hostName, knownHead: deviceKnows)
            }
            switch asked {
            case .success(let (code, seen)):
                // Once admitted, this device accepts only a ledger that runs through what it saw.
                do {
                    try KnownHeads.write(seen, for: containerID, deviceKey: keyPath)
                } catch {
                    throw MountError(.cannotCreate, "cannot keep the ledger head this device saw: \(error)")
                }
                throw MountError(
                    .unreachable,
                    "this device is not a member of the encrypted container yet; it asked to join with the safety "
                        + "code \(code). On a member device, check that `syncfs-mount encryption devices CONTAINER` "
                        + "shows this very code, approve it with `syncfs-mount encryption approve CONTAINER \(code)`, "
                        + "then mount again (or mount with --recovery-key-file)")
            case .failure(let error):
                throw MountError(.unreachable, "this device is not a member, and its request to join failed: \(error)")
            }
        case .failure(let error):
            throw MountError(.badInput, "cannot open the encrypted container: \(error)")
        }
    }

    /// Checks that the ledger entry that admitted `device` is the one its owner confirmed: kept
    /// from an earlier confirmation (or the device made the container, or joined with the
    /// recovery key: `byRecovery`), else `code` must be that entry's admission code, which the
    /// approving device printed. So a server that shows the new device an old copy of the
    /// container, in which a removed member admitted it, is caught before anything is written.
    static func confirmAdmission(
        of device: DeviceKeys, in sealed: SealedContainer, keyPath: String, code: String?, byRecovery: Bool
    ) throws(MountError) {
        let containerID = sealed.containerID
        let admitted: LedgerHead?
        switch blockOnContainer({ () async throws(ContainerProtocolError) in
            try await sealed.admission(of: device.identity)
        }) {
        case .success(let head): admitted = head
        case .failure(let error): throw MountError(.unreachable, "cannot read the encrypted container: \(error)")
        }
        guard let admitted else {
            throw MountError(.badInput, "this device is not a member of the encrypted container")
        }
        // Admitted by the genesis: this device made the container (the keyring rules pin when each
        // member was added).
        if admitted.sequence == 1 { return }
        let confirmed: LedgerHead?
        do {
            confirmed = try KnownHeads.admission(for: containerID, deviceKey: keyPath)
        } catch {
            throw MountError(.badInput, error.description)
        }
        if confirmed != admitted && !byRecovery {
            guard let code else {
                throw MountError(
                    .badInput,
                    "this device was admitted to the encrypted container at ledger entry \(admitted.sequence), and "
                        + "its owner has not confirmed that admission here: give --admission-code with the code "
                        + "`syncfs-mount encryption approve` printed on the approving device (to a first mount, or to "
                        + "`encryption` or `rekey`), or mount with --recovery-key-file; nothing was done")
            }
            guard SafetyCode.matches(code, SafetyCode.admissionCode(admission: admitted.digest)) else {
                throw MountError(
                    .badInput,
                    "the admission code is not the one of the admission this server shows (ledger entry "
                        + "\(admitted.sequence)): check the code; if it is right, the server may be showing this "
                        + "device an old copy of the container. Nothing was mounted")
            }
        }
        do {
            try KnownHeads.keepAdmission(admitted, for: containerID, deviceKey: keyPath)
        } catch {
            throw MountError(.cannotCreate, "cannot keep this device's admission: \(error)")
        }
    }

    /// The recovery key in the private file at `path`.
    static func recoveryKey(_ path: String) throws(MountError) -> RecoveryKey {
        let text: String
        do {
            text = try RecoveryKeyFile.read(path)
        } catch {
            throw MountError(.badInput, error.description)
        }
        guard let key = RecoveryKey(text: text) else {
            throw MountError(.badInput, "\(path) does not hold a recovery key (SFR1-…), or it has a typo")
        }
        return key
    }

    /// Whether `container` holds a sealed container's genesis, asking again each second for
    /// `seconds` while it does not answer (as a first attach waits): a first mount cannot go on
    /// without knowing, or it could take a sealed container for a plain one.
    static func isSealed(_ container: any Container, within seconds: Double = 0) throws(MountError) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while true {
            let genesis = blockOnContainer { () async throws(ContainerProtocolError) in
                return try await container.entry(LedgerEntry.fileID(of: 1))
            }
            switch genesis {
            case .success(let entry): return entry != nil
            case .failure(let error) where error.isRetryable && ContinuousClock.now < deadline:
                Thread.sleep(forTimeInterval: 1)
            case .failure(let error):
                throw MountError(
                    .unreachable,
                    "could not attach the container to see whether it is encrypted: no answer for \(Int(seconds)) s "
                        + "(\(error)); nothing was mounted. Mount again once the container answers "
                        + "(--attach-timeout sets how long a first mount waits)")
            }
        }
    }

    static func deviceKeyPath(_ configuration: MountConfiguration) -> String {
        configuration.deviceKeyFile ?? StateDirectory.deviceKeyPath()
    }

    /// The device's keys, which must exist already.
    static func existingDeviceKeys(_ configuration: MountConfiguration) throws(MountError) -> DeviceKeys {
        let path = deviceKeyPath(configuration)
        let keys: DeviceKeys?
        do {
            keys = try DeviceKeyFile.load(path)
        } catch {
            throw MountError(.badInput, error.description)
        }
        guard let keys else {
            throw MountError(
                .badInput,
                "\(path) is missing: this mount's encrypted container was mounted with that device key, and a new "
                    + "key is not a member (give --device-key, or restore the key)")
        }
        return keys
    }

    static func deviceKeys(_ configuration: MountConfiguration) throws(MountError) -> DeviceKeys {
        let path = deviceKeyPath(configuration)
        do {
            return try DeviceKeyFile.loadOrCreate(path)
        } catch {
            throw MountError(.badInput, error.description)
        }
    }

    /// Makes `container` (empty) a sealed container with this device as its first member, and
    /// returns the recovery key to show once.
    static func create(_ container: any Container, deviceKeyFile: String?) throws(MountError) -> RecoveryKey {
        let path = deviceKeyFile ?? StateDirectory.deviceKeyPath()
        let device: DeviceKeys
        do {
            device = try DeviceKeyFile.loadOrCreate(path)
        } catch {
            throw MountError(.badInput, error.description)
        }
        let recovery = RecoveryKey.generate()
        let made = blockOnContainer { () async throws(ContainerProtocolError) in
            let changes = try await container.changes(after: .beginning, limit: 1)
            guard changes.entries.isEmpty else {
                throw ContainerProtocolError.invalidRequest(
                    "the container is not empty: only a new, empty container can be made encrypted")
            }
            return try await SealedContainer.create(
                in: container, as: device, recovery: recovery, deviceName: "genesis")
        }
        switch made {
        case .failure(let error):
            throw MountError(.badInput, "cannot make the container encrypted: \(error)")
        case .success(let sealed):
            // This device made it: from now on it expects this genesis there.
            guard let head = sealed.head else { break }
            // Not fatal: the container exists now, and its recovery key must be shown.
            do {
                try KnownHeads.write(head, for: container.containerID, deviceKey: path)
            } catch {
                printError("syncfs-mount: warning: cannot keep the new container's ledger head: \(error)")
            }
        }
        return recovery
    }

    /// The lines that show the recovery key, once.
    static func recoveryNotice(_ key: RecoveryKey) -> String {
        """
        Recovery key (write it down and keep it safe; it is shown only this once, and without it or a \
        member device the container's content cannot be read by anyone):
            \(key.text)
        """
    }
}
