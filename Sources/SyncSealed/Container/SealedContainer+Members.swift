import Foundation
import SyncBackend
import Synchronization

/// Joining, admitting and removing member devices: keyring commits of their own.
extension SealedContainer {
    // MARK: - Joining

    /// Asks to join the sealed container in `inner` as `device` (named `name` for people): stores
    /// the device's join request (`JoinRequest`) and returns the safety code its owner compares
    /// with the one a member device shows before approving, and the ledger head the request names,
    /// which the device must keep and open the container with once admitted. `knownHead` is the
    /// head this device kept of the container before, if any.
    public static func requestToJoin(
        _ inner: any Container, as device: DeviceKeys, name: String, knownHead: LedgerHead? = nil
    ) async throws(ContainerProtocolError) -> (code: String, seen: LedgerHead) {
        let reader = SealedContainer(wrapping: inner, as: device, knownHead: knownHead)
        let code = try await reader.safetyCode(for: device.identity)
        guard let seen = reader.head else { throw .invalidRequest("the sealed container has no ledger") }
        let id = JoinRequest.fileID(of: device.identity)
        let request = JoinRequest(device: device, name: name, time: now(), seen: seen)
        let current = try await inner.entry(id)
        let outcome = try await inner.commit(
            CommitRequest(
                id: id, baseVersion: current?.version ?? 0,
                change: .put(OpaqueEntry.state(of: id, sealed: request.encoded, chunks: [])), device: name))
        guard case .committed = outcome else { throw .busy("the join request was not stored (\(outcome)); try again") }
        return (code, seen)
    }

    /// The devices that asked to join and are not members, each with its safety code.
    public func joinRequests() async throws(ContainerProtocolError) -> [(request: JoinRequest, code: String)] {
        try await catchUp()
        let (requests, keyring, genesis) = state.withLock {
            ($0.view.joinRequests.values, $0.view.keyring, $0.view.genesis)
        }
        guard let keyring, let genesis else { return [] }
        return requests.filter { keyring.signer($0.device.signing) == nil }.sorted { $0.time < $1.time }
            .map { ($0, SafetyCode.code(genesis: genesis, device: $0.device)) }
    }

    /// Opens the sealed container in `inner` with its recovery key, makes `device` a member, and
    /// opens it as `device`. The genesis must be signed by this recovery key: a server that made
    /// up a container of its own naming the recovery key's public half cannot sign that.
    public static func joinWithRecovery(
        _ inner: any Container, recovery: RecoveryKey, device: DeviceKeys, knownHead: LedgerHead? = nil,
        onHead: @escaping @Sendable (LedgerHead) -> Void = { _ in }
    ) async throws(ContainerProtocolError) -> SealedContainer {
        let recovered = try await open(inner, as: recovery.deviceKeys, knownHead: knownHead)
        guard recovered.state.withLock({ $0.view.genesisSigner }) == recovery.deviceKeys.identity.signing else {
            throw .invalidRequest("this recovery key did not make this container")
        }
        try await recovered.admit(device.identity)
        return try await open(inner, as: device, knownHead: recovered.head, onHead: onHead)
    }

    // MARK: - Members

    /// The safety code of `device` in this container (`SafetyCode`): what this device shows for a
    /// device that asks to join, and what that device shows for itself.
    public func safetyCode(for device: DeviceIdentity) async throws(ContainerProtocolError) -> String {
        try await readOnce()
        guard let genesis = state.withLock({ $0.view.genesis }) else {
            throw .invalidRequest("the sealed container has no genesis")
        }
        return SafetyCode.code(genesis: genesis, device: device)
    }

    /// The member devices and the recovery key, as the keyring in force says.
    public func members() async throws(ContainerProtocolError) -> (devices: [DeviceIdentity], recovery: DeviceIdentity)
    {
        try await catchUp()
        return try state.withLock { state throws(ContainerProtocolError) in
            guard let keyring = state.view.keyring else { throw .invalidRequest("the sealed container has no keyring") }
            return (keyring.members.map(\.identity), keyring.recovery)
        }
    }

    /// Admits the device of `request`, after its owner compared its safety code on both devices,
    /// if the head the device saw when it asked is in this device's ledger with no key epoch
    /// started after it (`JoinRequest`); else it must ask again.
    /// Returns the admission code (`SafetyCode.admissionCode`) its owner types at the device's
    /// first mount as a member.
    @discardableResult
    public func approve(_ request: JoinRequest) async throws(ContainerProtocolError) -> String {
        // Checked against the ledger as it is just before the admission is committed (inside the
        // keyring change, after its read), so no removal can slip in between.
        try await changeKeyring { keyring, secrets, sequence throws(ContainerProtocolError) in
            try state.withLock { state throws(ContainerProtocolError) in try Self.check(request, in: state.view) }
            guard keyring.signer(request.device.signing) == nil else { return nil }
            return (keyring.adding(request.device, in: sequence, secrets: secrets), nil)
        }
        guard let admitted = try await admission(of: request.device) else {
            throw .busy("the admission was not read back; run approve again")
        }
        return SafetyCode.admissionCode(admission: admitted.digest)
    }

    /// The ledger entry that made `device` a member (the newest, if it was admitted again), or nil
    /// if it is not one.
    public func admission(of device: DeviceIdentity) async throws(ContainerProtocolError) -> LedgerHead? {
        try await catchUp()
        return state.withLock { state in
            guard let member = state.view.keyring?.members.first(where: { $0.identity == device }),
                let digest = state.view.vouched[LedgerEntry.fileID(of: member.addedIn)]?.digest
            else { return nil }
            return LedgerHead(sequence: member.addedIn, digest: digest)
        }
    }

    /// Refuses a request whose device saw a ledger this device does not hold, or one from before
    /// the newest key epoch.
    private static func check(_ request: JoinRequest, in view: LedgerView) throws(ContainerProtocolError) {
        let seen = request.seen
        guard view.vouched[LedgerEntry.fileID(of: seen.sequence)]?.digest == seen.digest else {
            throw .invalidRequest(
                "the device asked to join from a ledger this device does not hold (entry \(seen.sequence)): the "
                    + "server showed it another container or history, so it is not admitted. Do not use that "
                    + "device's mount of this container; the server may be hostile")
        }
        guard seen.sequence >= view.newestEpochStarted else {
            throw .invalidRequest(
                "the device asked to join from ledger entry \(seen.sequence), before the members last changed "
                    + "(entry \(view.newestEpochStarted)), so it is not admitted. If a device was removed since, the "
                    + "server may be showing the new device an old copy of the container: check that its next "
                    + "request names a newer entry before approving it")
        }
    }

    /// Makes `device` a member: every epoch's secret is wrapped to it too, so it reads the whole
    /// history. Only after its owner compared its safety code on both devices (`approve`), or by
    /// the recovery key.
    public func admit(_ device: DeviceIdentity) async throws(ContainerProtocolError) {
        try await changeKeyring { keyring, secrets, sequence in
            guard keyring.signer(device.signing) == nil else { return nil }
            return (keyring.adding(device, in: sequence, secrets: secrets), nil)
        }
    }

    /// Removes the member whose signing key is `signing` and starts a new epoch, wrapped to the
    /// members that stay and the recovery key only: from now on nothing written can be read by it.
    /// (What was written before stays readable to it until `rekey` re-seals it; revoke its token
    /// on the server too.)
    public func remove(_ signing: [UInt8]) async throws(ContainerProtocolError) {
        try await changeKeyring { keyring, _, _ in
            guard keyring.members.contains(where: { $0.identity.signing == signing }) else { return nil }
            let secret = EpochSecret.random()
            return (keyring.removing(signing, newSecret: secret), secret)
        }
    }

    /// Commits the keyring `change` makes of the one in force (nil: nothing to do), with a ledger
    /// entry of its own; `change` is given every epoch secret this device holds and the sequence
    /// the commit will have, and returns the new keyring and a new epoch's secret if it starts one.
    func changeKeyring(
        _ change: (Keyring, [KeyEpoch: EpochSecret], UInt64) throws(ContainerProtocolError) -> (Keyring, EpochSecret?)?
    ) async throws(ContainerProtocolError) {
        try await turn.run { () async throws(ContainerProtocolError) in
            for _ in 0..<Self.commitAttempts {
                try await catchUpInTurn()
                let (keyring, head) = try state.withLock { state throws(ContainerProtocolError) in
                    guard let keyring = state.view.keyring, let head = state.view.head else {
                        throw ContainerProtocolError.invalidRequest("the sealed container has no keyring")
                    }
                    return (keyring, head)
                }
                let secrets: [KeyEpoch: EpochSecret]
                do {
                    secrets = try keyring.secrets(for: device)
                } catch {
                    throw .invalidRequest("this device cannot unwrap the container's secrets: \(error)")
                }
                guard secrets.count == keyring.epochs.count else {
                    throw .invalidRequest(
                        "this device does not hold every epoch's secret; only a full member can change members")
                }
                guard let (next, newSecret) = try change(keyring, secrets, head.sequence + 1) else { return }
                let epoch = next.newestEpoch
                guard let secret = newSecret ?? secrets[epoch] else {
                    throw .invalidRequest("no secret for epoch \(epoch)")
                }
                let builder = SealedCommit(
                    sequence: head.sequence + 1, previous: head.digest,
                    keys: EpochKeys(secret: secret, container: keyring.container, epoch: epoch), device: "keyring",
                    signer: device, time: Self.now())
                let (requests, entry) = builder.requests(for: [], publishing: next)
                if case .committed = try await inner.commit(allOrNothing: requests) {
                    state.withLock { $0.ownCommit = LedgerHead(sequence: entry.sequence, digest: entry.digest) }
                    try await catchUpInTurn()
                    return
                }
            }
            throw .busy("the sealed container's ledger kept moving; try again")
        }
    }
}
