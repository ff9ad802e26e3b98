import SyncBackend

/// Who may read and write a sealed container: its member devices, its recovery key, and each key
/// epoch's secret wrapped to every device that may hold it. The keyring is public (a device reads
/// it before it holds any key) and changes only by a commit whose ledger entry names its new
/// digest, signed by a member of the keyring before it (`KeyringRules`).
///
/// Encoded: `version (1) ‖ container (16) ‖ recovery signing (32) ‖ recovery agreement (32) ‖
/// member count (4) ‖ (signing (32) ‖ agreement (32) ‖ added in ledger entry (8)) per member ‖
/// epoch count (4) ‖ per epoch: (epoch (4) ‖ wrap count (4) ‖ (recipient's signing key (32) ‖
/// wrapped secret (80)) per wrap)`; members and wraps in the order of their signing keys.
public struct Keyring: Equatable, Sendable {
    public struct Member: Equatable, Sendable {
        public var identity: DeviceIdentity
        /// The ledger entry that added it.
        public var addedIn: UInt64
    }

    public struct Epoch: Equatable, Sendable {
        public var epoch: KeyEpoch
        /// Recipient's signing key → the secret wrapped to its agreement key (`EpochKeyWrap`).
        public var wraps: [[UInt8]: [UInt8]]
    }

    public let container: SealedContainerID
    public let recovery: DeviceIdentity
    public private(set) var members: [Member]
    /// Oldest first; epoch numbers 0, 1, 2 … with none missing.
    public private(set) var epochs: [Epoch]

    /// The genesis keyring: one member (the creating device), epoch 0 wrapped to it and to the
    /// recovery key.
    public static func genesis(
        container: SealedContainerID, creator: DeviceIdentity, recovery: DeviceIdentity, secret: EpochSecret
    ) -> Keyring {
        var keyring = Keyring(
            container: container, recovery: recovery, members: [Member(identity: creator, addedIn: 1)], epochs: [])
        keyring.epochs = [keyring.wrapping(secret, epoch: 0)]
        return keyring
    }

    init(container: SealedContainerID, recovery: DeviceIdentity, members: [Member], epochs: [Epoch]) {
        self.container = container
        self.recovery = recovery
        self.members = members.sorted { $0.identity.signing.lexicographicallyPrecedes($1.identity.signing) }
        self.epochs = epochs
    }

    public var newestEpoch: KeyEpoch { epochs.last?.epoch ?? 0 }

    /// The member (or the recovery key) whose signing key is `signing`.
    public func signer(_ signing: [UInt8]) -> DeviceIdentity? {
        if recovery.signing == signing { return recovery }
        return members.first { $0.identity.signing == signing }?.identity
    }

    /// `secret` wrapped to every member and the recovery key.
    private func wrapping(_ secret: EpochSecret, epoch: KeyEpoch) -> Epoch {
        var wraps: [[UInt8]: [UInt8]] = [:]
        for identity in members.map(\.identity) + [recovery] {
            wraps[identity.signing] = EpochKeyWrap.wrap(secret, epoch: epoch, container: container, to: identity)
        }
        return Epoch(epoch: epoch, wraps: wraps)
    }

    /// The keyring with `device` added by ledger entry `sequence`, every epoch's secret (from
    /// `secrets`, which must hold them all) wrapped to it too: a new member reads the history.
    public func adding(_ device: DeviceIdentity, in sequence: UInt64, secrets: [KeyEpoch: EpochSecret]) -> Keyring {
        var next = self
        next.members.removeAll { $0.identity.signing == device.signing }
        next.members.append(Member(identity: device, addedIn: sequence))
        next.members.sort { $0.identity.signing.lexicographicallyPrecedes($1.identity.signing) }
        for index in next.epochs.indices {
            let epoch = next.epochs[index].epoch
            guard let secret = secrets[epoch] else { preconditionFailure("no secret for epoch \(epoch)") }
            next.epochs[index].wraps[device.signing] = EpochKeyWrap.wrap(
                secret, epoch: epoch, container: container, to: device)
        }
        return next
    }

    /// The keyring without `signing`'s device, and a new epoch with `secret`, wrapped to the
    /// members that stay and the recovery key only.
    public func removing(_ signing: [UInt8], newSecret secret: EpochSecret) -> Keyring {
        var next = self
        next.members.removeAll { $0.identity.signing == signing }
        next.epochs.append(next.wrapping(secret, epoch: newestEpoch + 1))
        return next
    }

    /// The keyring with a new epoch with `secret`, wrapped to every member and the recovery key:
    /// a fresh key for what is written (and re-sealed) from now on, with no member removed
    /// (`SealedContainer.startEpoch`).
    public func startingEpoch(_ secret: EpochSecret) -> Keyring {
        var next = self
        next.epochs.append(next.wrapping(secret, epoch: newestEpoch + 1))
        return next
    }

    /// Every epoch secret wrapped to `keys`' device.
    public func secrets(for keys: DeviceKeys) throws(SealedError) -> [KeyEpoch: EpochSecret] {
        var secrets: [KeyEpoch: EpochSecret] = [:]
        for epoch in epochs {
            guard let wrapped = epoch.wraps[keys.identity.signing] else { continue }
            secrets[epoch.epoch] = try EpochKeyWrap.unwrap(
                wrapped, epoch: epoch.epoch, container: container, with: keys)
        }
        return secrets
    }

    public var encoded: [UInt8] {
        var out = SealedWriter(capacity: 128 + 72 * members.count + epochs.count * members.count * 112)
        out.byte(SealedFormat.version)
        out.fixed(container.bytes)
        out.fixed(recovery.signing)
        out.fixed(recovery.agreement)
        out.uint32(UInt32(members.count))
        for member in members {
            out.fixed(member.identity.signing)
            out.fixed(member.identity.agreement)
            out.uint64(member.addedIn)
        }
        out.uint32(UInt32(epochs.count))
        for epoch in epochs {
            out.uint32(epoch.epoch)
            out.uint32(UInt32(epoch.wraps.count))
            for (recipient, wrapped) in epoch.wraps.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                out.fixed(recipient)
                out.fixed(wrapped)
            }
        }
        return out.bytes
    }

    /// The most members and epochs a keyring may hold (a bound on what a reader allocates).
    public static let maximumMembers = 1_000
    public static let maximumEpochs = 10_000

    public init(encoded: [UInt8]) throws(SealedError) {
        var reader = SealedReader(encoded)
        guard let version = reader.byte() else { throw .malformed("an empty keyring") }
        guard version == SealedFormat.version else { throw .unsupportedVersion(version) }
        guard let containerBytes = reader.fixed(16), let container = SealedContainerID(bytes: containerBytes),
            let recoverySigning = reader.fixed(32), let recoveryAgreement = reader.fixed(32),
            let recovery = DeviceIdentity(signing: recoverySigning, agreement: recoveryAgreement),
            let memberCount = reader.uint32(), memberCount <= Self.maximumMembers
        else { throw .malformed("a keyring's header") }
        var members: [Member] = []
        var previous: [UInt8]?
        for _ in 0..<memberCount {
            guard let signing = reader.fixed(32), let agreement = reader.fixed(32),
                let identity = DeviceIdentity(signing: signing, agreement: agreement), let addedIn = reader.uint64(),
                previous.map({ $0.lexicographicallyPrecedes(signing) }) ?? true
            else { throw .malformed("a keyring's member") }
            previous = signing
            members.append(Member(identity: identity, addedIn: addedIn))
        }
        guard let epochCount = reader.uint32(), epochCount >= 1, epochCount <= Self.maximumEpochs else {
            throw .malformed("a keyring's epochs")
        }
        var epochs: [Epoch] = []
        for expected in 0..<epochCount {
            guard let number = reader.uint32(), number == expected, let wrapCount = reader.uint32(),
                wrapCount <= Self.maximumMembers + 1
            else { throw .malformed("a keyring's epoch") }
            var wraps: [[UInt8]: [UInt8]] = [:]
            var previousRecipient: [UInt8]?
            for _ in 0..<wrapCount {
                guard let recipient = reader.fixed(32), let wrapped = reader.fixed(EpochKeyWrap.wrappedBytes),
                    previousRecipient.map({ $0.lexicographicallyPrecedes(recipient) }) ?? true
                else { throw .malformed("a keyring's wrapped secret") }
                previousRecipient = recipient
                wraps[recipient] = wrapped
            }
            epochs.append(Epoch(epoch: number, wraps: wraps))
        }
        guard reader.isAtEnd else { throw .malformed("bytes after a keyring") }
        self.container = container
        self.recovery = recovery
        self.members = members
        self.epochs = epochs
    }

    /// Where the keyring that ledger entry `sequence` publishes is stored: the first 16 bytes of
    /// SHA-256 of the label `syncfs-sealed-v1 keyring-id` and the sequence. Each version of the
    /// keyring is an entry of its own, never changed, so the feed never folds one into the next:
    /// a reader has the keyring that was in force at every ledger entry.
    public static func fileID(publishedIn sequence: UInt64) -> FileID {
        var tail = SealedWriter()
        tail.uint64(sequence)
        return SealedFormat.reservedID("keyring-id", tail.bytes)
    }
}
