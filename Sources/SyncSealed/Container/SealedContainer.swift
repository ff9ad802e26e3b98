import Foundation
import SyncBackend
import Synchronization

/// A sealed (end-to-end encrypted) container over any other container: the engine above sees
/// plain entries and chunks, the container underneath (a local directory, a server) stores only
/// sealed records, sealed chunks, keyrings and ledger entries (decision 030, doc/CRYPTO.md).
///
/// The contract, beyond `Container`'s:
/// - **Nothing unvouched is used.** Before it answers, the wrapper reads the feed underneath to
///   its end and checks it (`LedgerView`); entries are answered from that checked, decrypted view
///   (`SealedTree`). Anything the ledger does not vouch for raises a `SealedAlarm`, which stays:
///   every later call fails with `storageFailure` naming it (retryable, so nothing is ever taken
///   for a deletion and queued changes stay queued), and `alarm` reports it.
/// - **Commits are decided here**, by `CommitRules` against the checked tree, and stored with
///   their ledger entry in one `commit(allOrNothing:)`; a commit that lost the race for the next
///   ledger entry is decided again after a read.
/// - **Chunks** are sealed with the newest epoch's keys under their keyed IDs; `missingChunks`
///   and `chunk` translate the engine's SHA-256 names.
/// - `onHead` is told every new ledger head, for the device to keep (`LedgerHead`).
public final class SealedContainer: Container, ChunkingContainer, ReportingContainer {
    public var containerID: String { inner.containerID }

    let inner: any Container
    let device: DeviceKeys
    let onHead: @Sendable (LedgerHead) -> Void
    let turn = AsyncTurn()
    let state: Mutex<State>

    struct State {
        var view: LedgerView
        var tree = SealedTree()
        var keys: [KeyEpoch: EpochKeys] = [:]
        /// Where the checked read of the feed underneath has reached.
        var cursor = FeedCursor.beginning
        var alarm: SealedAlarm?
        /// The epoch whose chunk IDs a plain chunk is stored under (the newest record using it).
        var chunkEpochs: [ChunkHash: KeyEpoch] = [:]
        /// The newest epoch's chunker, made once per epoch.
        var chunker: (KeyEpoch, ContentDefinedChunker)?
        /// The newest head given to `onHead`.
        var keptHead: LedgerHead?
        /// Who is told of an alarm (`observeAlarm`).
        var alarmObservers: [@Sendable (String) -> Void] = []
        /// This device's last commit the container answered as stored, checked at the next read.
        var ownCommit: LedgerHead?
        /// The feed the engine reads, built from the checked view (its cursors are the wrapper's).
        var feed = SealedFeed()
        /// `waitForChanges` just read the feed underneath to its end, for the `changes` call that
        /// follows it at once.
        var caughtUpForWait = false
    }

    /// How many times a commit is decided again after losing the race for the next ledger entry.
    static let commitAttempts = 16

    /// The sealed container in `inner`, read and checked at its first use (so a mount can start
    /// offline); `open` also checks at once that `device` is a member.
    public init(
        wrapping inner: any Container, as device: DeviceKeys, knownHead: LedgerHead?,
        onHead: @escaping @Sendable (LedgerHead) -> Void = { _ in }
    ) {
        self.inner = inner
        self.device = device
        self.onHead = onHead
        self.state = Mutex(State(view: LedgerView(knownHead: knownHead), keptHead: knownHead))
    }

    /// Opens the sealed container in `inner` as `device`, which must be a member. `knownHead` is
    /// the newest head this device has seen of it (nil the first time).
    public static func open(
        _ inner: any Container, as device: DeviceKeys, knownHead: LedgerHead?,
        onHead: @escaping @Sendable (LedgerHead) -> Void = { _ in }
    ) async throws(ContainerProtocolError) -> SealedContainer {
        let container = SealedContainer(wrapping: inner, as: device, knownHead: knownHead, onHead: onHead)
        guard try await container.isMember() else {
            throw .invalidRequest("this device is not a member of the sealed container \(inner.containerID)")
        }
        return container
    }

    /// Makes `inner` (which must hold no sealed container yet) a sealed container with `device`
    /// as its first member and `recovery` as its recovery key, and opens it.
    public static func create(
        in inner: any Container, as device: DeviceKeys, recovery: RecoveryKey, deviceName: String,
        onHead: @escaping @Sendable (LedgerHead) -> Void = { _ in }
    ) async throws(ContainerProtocolError) -> SealedContainer {
        let id = SealedContainerID.random()
        let secret = EpochSecret.random()
        let keyring = Keyring.genesis(
            container: id, creator: device.identity, recovery: recovery.deviceKeys.identity, secret: secret)
        // The recovery key signs the genesis: a device that joins with it knows the container.
        let genesis = SealedCommit(
            sequence: 1, previous: LedgerEntry.genesisPrevious,
            keys: EpochKeys(secret: secret, container: id, epoch: 0),
            device: deviceName, signer: recovery.deviceKeys, time: Self.now())
        let (requests, genesisEntry) = genesis.requests(for: [], publishing: keyring)
        switch try await inner.commit(allOrNothing: requests) {
        case .committed: break
        case .refused:
            throw .invalidRequest("\(inner.containerID) already holds a sealed container")
        }
        // The genesis this device just made is the one it expects: a server that shows another
        // container in its place is caught at once.
        return try await open(
            inner, as: device, knownHead: LedgerHead(sequence: 1, digest: genesisEntry.digest), onHead: onHead)
    }

    /// Whether this device is a member (after reading the container): it holds the keys.
    public func isMember() async throws(ContainerProtocolError) -> Bool {
        try await catchUp()
        return state.withLock { state in
            state.view.head != nil && state.view.keyring?.signer(device.identity.signing) != nil && !state.keys.isEmpty
        }
    }

    /// For `status`: the ledger head, the newest key epoch, the members, and the alarm if any.
    public var report: ContainerReport {
        state.withLock { state in
            var line = "end-to-end encrypted"
            if let head = state.view.head, let keyring = state.view.keyring {
                line +=
                    ", ledger entry \(head.sequence) (\(Hex.string(head.digest.prefix(8)))), key epoch "
                    + "\(keyring.newestEpoch), \(keyring.members.count) member device(s)"
            } else {
                line += ", not read yet"
            }
            return ContainerReport(encryption: line, alarm: state.alarm?.description)
        }
    }

    public func observeAlarm(_ handler: @escaping @Sendable (String) -> Void) {
        let raised = state.withLock { state -> SealedAlarm? in
            if state.alarm == nil { state.alarmObservers.append(handler) }
            return state.alarm
        }
        if let raised { handler(raised.description) }
    }

    /// The alarm raised, if any: then nothing more is read or written.
    public var alarm: SealedAlarm? { state.withLock { $0.alarm } }

    /// The newest ledger entry checked.
    public var head: LedgerHead? { state.withLock { $0.view.head } }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    // MARK: - Reading the feed underneath

    /// Reads the feed underneath to its end, checks it, and decrypts what changed.
    func catchUp() async throws(ContainerProtocolError) {
        try await turn.run { () async throws(ContainerProtocolError) in try await catchUpInTurn() }
    }

    func catchUpInTurn() async throws(ContainerProtocolError) {
        try checkAlarm()
        var cursor = state.withLock { $0.cursor }
        while true {
            let page = try await inner.changes(after: cursor, limit: 1_000)
            // A feed that says more is coming but does not move on would be read forever.
            if page.moreComing && page.cursor == cursor {
                throw .unavailable("the container's change feed does not advance past \(cursor)")
            }
            // The view and its cursor move together, a page at a time: a read that fails part-way
            // goes on after the last page taken, never reads a page twice.
            try raising { () throws(SealedAlarm) in
                try state.withLock { (state: inout State) throws(SealedAlarm) in
                    for entry in page.entries { try state.view.read(entry) }
                    state.cursor = page.cursor
                }
            }
            cursor = page.cursor
            if !page.moreComing { break }
        }
        try raising { () throws(SealedAlarm) in
            try state.withLock { (state: inout State) throws(SealedAlarm) in
                try state.view.settle()
                state.cursor = cursor
                // A commit the container said it stored must be there, as this device signed it.
                if let own = state.ownCommit {
                    guard let head = state.view.head, head.sequence >= own.sequence,
                        state.view.vouched[LedgerEntry.fileID(of: own.sequence)]?.digest == own.digest
                    else { throw .commitNotStored(sequence: own.sequence) }
                    state.ownCommit = nil
                }
                let hadKeys = !state.keys.isEmpty
                try Self.unlock(&state, with: device)
                var changed = state.view.takeChanged()
                // The head is kept (when it moved) before anything of it is shown: an engine that
                // saw a change has it on disk behind the head that vouched for it.
                if let head = state.view.head, head != state.keptHead {
                    onHead(head)
                    state.keptHead = head
                }
                // A device that is not a member (yet) checks the ledger but reads no record; the
                // read after it is admitted decrypts everything, in ledger order.
                guard !state.keys.isEmpty else { return }
                if !hadKeys {
                    let vouched = state.view.vouched
                    changed = vouched.compactMap { $0.value.kind == .record ? ($0.value.spot, $0.key) : nil }
                        .sorted { $0.0 < $1.0 }.map(\.1)
                }
                for id in changed {
                    guard let vouched = state.view.vouched[id], vouched.kind == .record else { continue }
                    let entry = try Self.decrypt(vouched, keys: state.keys)
                    state.tree.set(entry)
                    state.feed.move(id, to: vouched.spot)
                    let epoch = try Self.epoch(of: vouched)
                    for piece in entry.state.manifest { state.chunkEpochs[piece.hash] = epoch }
                }
                if let problem = state.tree.problem(around: changed) { throw .treeBroken(problem) }
            }
        }
    }

    /// Every epoch secret the keyring wraps to this device, as keys.
    private static func unlock(_ state: inout State, with device: DeviceKeys) throws(SealedAlarm) {
        guard let keyring = state.view.keyring, state.keys.count < keyring.epochs.count else { return }
        let secrets: [KeyEpoch: EpochSecret]
        do {
            secrets = try keyring.secrets(for: device)
        } catch {
            throw .ledgerBroken(
                sequence: state.view.head?.sequence ?? 0, reason: "a secret wrapped to this device: \(error)")
        }
        for (epoch, secret) in secrets where state.keys[epoch] == nil {
            state.keys[epoch] = EpochKeys(secret: secret, container: keyring.container, epoch: epoch)
        }
    }

    private static func epoch(of vouched: VouchedEntry) throws(SealedAlarm) -> KeyEpoch {
        do {
            return try SealedRecord.epoch(of: vouched.sealed)
        } catch {
            throw .unreadable(vouched.stored.id, error.description)
        }
    }

    /// The entry as the engine sees it: its version from the ledger change that vouched for it
    /// (`FeedSpot.version`), its author the device name the ledger signed. The manifest the server sees must be the one the record
    /// implies (else the server's collector could be made to drop chunks the record needs).
    static func decrypt(_ vouched: VouchedEntry, keys: [KeyEpoch: EpochKeys]) throws(SealedAlarm) -> RemoteEntry {
        let id = vouched.stored.id
        let epoch = try epoch(of: vouched)
        guard let epochKeys = keys[epoch] else { throw .unreadable(id, "this device holds no key of epoch \(epoch)") }
        let state: EntryState
        do {
            state = try SealedRecord.open(vouched.sealed, of: id, keys: epochKeys)
        } catch {
            throw .unreadable(id, error.description)
        }
        if id != .root {
            let implied = OpaqueEntry.serverManifest(of: state, keys: epochKeys)
            guard vouched.stored.state.manifest == implied else {
                throw .unreadable(id, "the server's copy references other chunks than the record")
            }
        }
        return RemoteEntry(
            id: id, version: vouched.spot.version, isDeleted: vouched.stored.isDeleted, device: vouched.device,
            state: state)
    }

    func checkAlarm() throws(ContainerProtocolError) {
        if let alarm = state.withLock({ $0.alarm }) { throw Self.failure(alarm) }
    }

    /// Runs `body`; an alarm it raises is kept, and answered as `storageFailure`.
    func raising<T>(_ body: () throws(SealedAlarm) -> T) throws(ContainerProtocolError) -> T {
        do {
            return try body()
        } catch {
            let observers = state.withLock { state -> [@Sendable (String) -> Void] in
                guard state.alarm == nil else { return [] }
                state.alarm = error
                defer { state.alarmObservers = [] }
                return state.alarmObservers
            }
            for observer in observers { observer(error.description) }
            throw Self.failure(error)
        }
    }

    static func failure(_ alarm: SealedAlarm) -> ContainerProtocolError {
        .storageFailure("sealed container alarm: \(alarm.description); nothing more is applied or uploaded")
    }
}
