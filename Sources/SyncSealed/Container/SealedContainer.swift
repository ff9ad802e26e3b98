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

    private let inner: any Container
    private let device: DeviceKeys
    private let onHead: @Sendable (LedgerHead) -> Void
    private let turn = AsyncTurn()
    private let state: Mutex<State>

    private struct State {
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
        /// This device's last commit the container answered as stored, checked at the next read.
        var ownCommit: LedgerHead?
        /// The page `waitForChanges` read last, for the `changes` call that follows it at once.
        var lastPage: (cursor: FeedCursor, page: ChangeBatch)?
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
        self.state = Mutex(State(view: LedgerView(knownHead: knownHead)))
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

    private func catchUpInTurn() async throws(ContainerProtocolError) {
        try checkAlarm()
        var cursor = state.withLock { $0.cursor }
        while true {
            let page = try await inner.changes(after: cursor, limit: 1_000)
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
        let head = try raising { () throws(SealedAlarm) -> LedgerHead? in
            try state.withLock { (state: inout State) throws(SealedAlarm) -> LedgerHead? in
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
                // A device that is not a member (yet) checks the ledger but reads no record; the
                // read after it is admitted decrypts everything.
                guard !state.keys.isEmpty else { return state.view.head }
                if !hadKeys { changed = state.view.vouched.keys.filter { state.view.vouched[$0]?.kind == .record } }
                for id in changed {
                    guard let vouched = state.view.vouched[id], vouched.kind == .record else { continue }
                    let entry = try Self.decrypt(vouched, keys: state.keys)
                    state.tree.set(entry)
                    let epoch = try Self.epoch(of: vouched)
                    for piece in entry.state.manifest { state.chunkEpochs[piece.hash] = epoch }
                }
                if let problem = state.tree.problem(around: changed) { throw .treeBroken(problem) }
                return state.view.head
            }
        }
        if let head { onHead(head) }
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

    /// The entry as the engine sees it. The manifest the server sees must be the one the record
    /// implies (else the server's collector could be made to drop chunks the record needs).
    private static func decrypt(_ vouched: VouchedEntry, keys: [KeyEpoch: EpochKeys]) throws(SealedAlarm) -> RemoteEntry
    {
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
            id: id, version: vouched.stored.version, isDeleted: vouched.stored.isDeleted, device: vouched.stored.device,
            state: state)
    }

    private func checkAlarm() throws(ContainerProtocolError) {
        if let alarm = state.withLock({ $0.alarm }) { throw Self.failure(alarm) }
    }

    /// Runs `body`; an alarm it raises is kept, and answered as `storageFailure`.
    private func raising<T>(_ body: () throws(SealedAlarm) -> T) throws(ContainerProtocolError) -> T {
        do {
            return try body()
        } catch {
            state.withLock { if $0.alarm == nil { $0.alarm = error } }
            throw Self.failure(error)
        }
    }

    static func failure(_ alarm: SealedAlarm) -> ContainerProtocolError {
        .storageFailure("sealed container alarm: \(alarm.description); nothing more is applied or uploaded")
    }

    // MARK: - Entries and the feed

    public func entry(_ id: FileID) async throws(ContainerProtocolError) -> RemoteEntry? {
        try await catchUp()
        return state.withLock { $0.tree.entry(id) }
    }

    /// A page of the feed underneath, with what the engine sees of it: the records the ledger
    /// vouches for at exactly these versions (an older version in the page was superseded, and
    /// the newer one comes later); ledger entries and keyrings are never shown. Pages with nothing
    /// to show are read through, so an answer is empty only at the end of the feed.
    public func changes(after cursor: FeedCursor, limit: Int) async throws(ContainerProtocolError) -> ChangeBatch {
        try checkAlarm()
        // The page a wait just read (its entries are vouched; a page read a moment ago is still a
        // right answer: what came since follows it).
        let waited = state.withLock { state -> ChangeBatch? in
            defer { state.lastPage = nil }
            guard let last = state.lastPage, last.cursor == cursor, last.page.entries.count <= limit else { return nil }
            return last.page
        }
        if let waited { return waited }
        // A commit of this device the container said it stored is checked by the next read.
        if state.withLock({ $0.ownCommit != nil }) { try await catchUp() }
        var position = cursor
        while true {
            let page = try await inner.changes(after: position, limit: limit)
            // The page may hold commits made after the catch-up: read them too before answering.
            let behind = state.withLock { state in
                page.entries.contains { entry in
                    state.view.vouched[entry.id].map { $0.stored.version < entry.version } ?? true
                }
            }
            if behind { try await catchUp() }
            let entries = state.withLock { state in
                page.entries.compactMap { entry -> RemoteEntry? in
                    guard let shown = state.tree.entries[entry.id], shown.version == entry.version else { return nil }
                    return shown
                }
            }
            if entries.isEmpty && page.moreComing {
                position = page.cursor
                continue
            }
            return ChangeBatch(entries: entries, cursor: page.cursor, moreComing: page.moreComing)
        }
    }

    /// True as soon as the feed after `cursor` holds something the engine sees (a commit that
    /// only changed the ledger or the keyring does not count).
    public func waitForChanges(after cursor: FeedCursor, timeout: Duration) async throws(ContainerProtocolError) -> Bool
    {
        let deadline = ContinuousClock.now + timeout
        var position = cursor
        while true {
            // A cancelled wait answers false, as the contract says, even when the read it was
            // making fails for the cancellation.
            if Task.isCancelled { return false }
            let page: ChangeBatch
            do {
                page = try await changes(after: position, limit: 64)
            } catch {
                if Task.isCancelled { return false }
                throw error
            }
            if !page.entries.isEmpty {
                state.withLock { $0.lastPage = (position, page) }
                return true
            }
            position = page.cursor
            let remaining = deadline - .now
            guard remaining > .zero, try await inner.waitForChanges(after: position, timeout: remaining) else {
                return false
            }
        }
    }

    // MARK: - Commits

    public func commit(_ request: CommitRequest) async throws(ContainerProtocolError) -> CommitOutcome {
        let outcomes = try await commit(batch: [request])
        return outcomes[0]
    }

    public func commit(batch requests: [CommitRequest]) async throws(ContainerProtocolError) -> [CommitOutcome] {
        try await commit(requests, allOrNothing: false)
    }

    public func commit(allOrNothing requests: [CommitRequest]) async throws(ContainerProtocolError)
        -> AllOrNothingOutcome
    {
        AllOrNothingOutcome(deciding: try await commit(requests, allOrNothing: true))
    }

    /// Decides `requests` against the checked tree and stores the changes with their ledger
    /// entry; with `allOrNothing`, nothing is stored unless every change would commit.
    private func commit(_ requests: [CommitRequest], allOrNothing: Bool) async throws(ContainerProtocolError)
        -> [CommitOutcome]
    {
        try CommitBatch.check(requests)
        return try await turn.run { () async throws(ContainerProtocolError) -> [CommitOutcome] in
            var setAside: [Int: CommitOutcome] = [:]
            for _ in 0..<Self.commitAttempts {
                try await catchUpInTurn()
                let attempt = try plan(requests, setAside: setAside)
                let refused = attempt.outcomes.contains { if case .committed = $0 { false } else { true } }
                if attempt.changes.isEmpty || (allOrNothing && refused) { return attempt.outcomes }
                switch try await inner.commit(allOrNothing: attempt.requests) {
                case .committed(let stored):
                    // Each change is answered with the version the container gave its record; the
                    // next read checks the commit like any other, that it is there as signed, and
                    // brings it into the tree.
                    state.withLock { $0.ownCommit = attempt.ledger }
                    return attempt.outcomes.enumerated().map { index, outcome in
                        guard case .committed(var entry) = outcome,
                            let position = attempt.requestIndex.firstIndex(of: index), position < stored.count
                        else { return outcome }
                        entry.version = stored[position].version
                        return .committed(entry)
                    }
                case .refused(let index, .chunksMissing(let ids)) where index < attempt.requestIndex.count:
                    // Chunks the engine must upload first: answer that change so, and (unless all
                    // or nothing) commit the rest.
                    let original = attempt.requestIndex[index]
                    let missing = CommitOutcome.chunksMissing(attempt.plainHashes(for: ids, of: index))
                    if allOrNothing {
                        return attempt.outcomes.enumerated().map { $0.offset == original ? missing : $0.element }
                    }
                    setAside[original] = missing
                case .refused:
                    // Someone else committed first (the ledger's next entry, or one of these
                    // entries): read, decide again.
                    continue
                }
            }
            throw .busy("the sealed container's ledger kept moving; try again")
        }
    }

    /// A decided batch: each request's outcome (`.committed` placeholders for the changes to
    /// store), and the requests underneath that store them.
    private struct Attempt {
        var outcomes: [CommitOutcome]
        var changes: [PlannedChange]
        var requests: [CommitRequest]
        /// For each request underneath that stores a record: the engine's request it came from.
        var requestIndex: [Int]
        var keys: EpochKeys
        var manifests: [[ChunkRef]]
        /// The ledger entry the requests end with.
        var ledger: LedgerHead

        /// The plain hashes of `ids` among the manifest of request `index` underneath.
        func plainHashes(for ids: [ChunkHash], of index: Int) -> [ChunkHash] {
            let wanted = Set(ids)
            var seen = Set<ChunkHash>()
            return manifests[index].map(\.hash).filter {
                wanted.contains(keys.chunkID(for: $0)) && seen.insert($0).inserted
            }
        }
    }

    private func plan(_ requests: [CommitRequest], setAside: [Int: CommitOutcome]) throws(ContainerProtocolError)
        -> Attempt
    {
        let (tree, head, keys) = try state.withLock { state throws(ContainerProtocolError) in
            guard let head = state.view.head, let newest = state.view.keyring?.newestEpoch,
                let keys = state.keys[newest]
            else { throw ContainerProtocolError.invalidRequest("this device holds no key of the newest epoch") }
            return (state.tree, head, keys)
        }
        var lookup = PlannedLookup(tree: tree)
        var outcomes: [CommitOutcome] = []
        var changes: [PlannedChange] = []
        var requestIndex: [Int] = []
        var manifests: [[ChunkRef]] = []
        var nextVersion = (tree.entries.values.map(\.version).max() ?? 0) + 1
        for (index, request) in requests.enumerated() {
            if let outcome = setAside[index] {
                outcomes.append(outcome)
                continue
            }
            switch try CommitRules.decide(request, in: lookup) {
            case .refuse(let outcome):
                outcomes.append(outcome)
            case .apply(let isDeleted, let newState):
                let current = tree.entry(request.id)
                let kind: PlannedChange.Kind
                if isDeleted {
                    guard let stored = state.withLock({ $0.view.vouched[request.id] }) else {
                        throw .invalidRequest("entry \(request.id) is not stored; there is nothing to delete")
                    }
                    kind = .delete(storedSealed: stored.sealed)
                } else {
                    let sealedBytes = SealedPadding.bucket(
                        SealedEnvelope.overhead + 4 + RecordEncoding.encode(newState).count)
                    guard sealedBytes <= OpaqueEntry.maximumSealedBytes else {
                        throw .invalidRequest(
                            "entry \(request.id) is too large for an encrypted container: its record would take "
                                + "\(sealedBytes) bytes, at most \(OpaqueEntry.maximumSealedBytes) (about 27,000 chunks)"
                        )
                    }
                    kind = .put(newState)
                }
                changes.append(PlannedChange(id: request.id, baseVersion: current?.version ?? 0, kind: kind))
                requestIndex.append(index)
                manifests.append(isDeleted ? [] : newState.manifest)
                // A placeholder: the real entry is read back after the commit.
                let entry = RemoteEntry(
                    id: request.id, version: nextVersion, isDeleted: isDeleted, device: request.device, state: newState)
                nextVersion += 1
                lookup.record(entry)
                outcomes.append(.committed(entry))
            }
        }
        let builder = SealedCommit(
            sequence: head.sequence + 1, previous: head.digest, keys: keys,
            device: requests.first?.device ?? "", signer: device, time: Self.now())
        let (underneath, entry) = builder.requests(for: changes)
        return Attempt(
            outcomes: outcomes, changes: changes, requests: underneath, requestIndex: requestIndex,
            keys: keys, manifests: manifests, ledger: LedgerHead(sequence: entry.sequence, digest: entry.digest))
    }

    // MARK: - Joining

    /// Asks to join the sealed container in `inner` as `device` (named `name` for people): stores
    /// the device's join request (`JoinRequest`) and returns the safety code its owner compares
    /// with the one a member device shows before approving.
    public static func requestToJoin(
        _ inner: any Container, as device: DeviceKeys, name: String
    ) async throws(ContainerProtocolError) -> String {
        let reader = SealedContainer(wrapping: inner, as: device, knownHead: nil)
        let code = try await reader.safetyCode(for: device.identity)
        let id = JoinRequest.fileID(of: device.identity)
        let request = JoinRequest(device: device, name: name, time: now())
        let current = try await inner.entry(id)
        let outcome = try await inner.commit(
            CommitRequest(
                id: id, baseVersion: current?.version ?? 0,
                change: .put(OpaqueEntry.state(of: id, sealed: request.encoded, chunks: [])), device: name))
        guard case .committed = outcome else { throw .busy("the join request was not stored (\(outcome)); try again") }
        return code
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
        _ inner: any Container, recovery: RecoveryKey, device: DeviceKeys,
        onHead: @escaping @Sendable (LedgerHead) -> Void = { _ in }
    ) async throws(ContainerProtocolError) -> SealedContainer {
        let recovered = try await open(inner, as: recovery.deviceKeys, knownHead: nil)
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

    /// Makes `device` a member: every epoch's secret is wrapped to it too, so it reads the whole
    /// history. Only after its owner compared its safety code on both devices.
    public func admit(_ device: DeviceIdentity) async throws(ContainerProtocolError) {
        try await changeKeyring { keyring, secrets, sequence in
            guard keyring.signer(device.signing) == nil else { return nil }
            return (keyring.adding(device, in: sequence, secrets: secrets), nil)
        }
    }

    /// Removes the member whose signing key is `signing` and starts a new epoch, wrapped to the
    /// members that stay and the recovery key only: from now on nothing written can be read by it.
    /// (What was written before stays readable to it until `rekey`; revoke its token on the
    /// server too.)
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
    private func changeKeyring(
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

    // MARK: - Chunks

    /// The newest epoch's keyed chunker. Before the keys are read (a mount that started offline),
    /// a chunker with a random table: its cuts match nothing anyone can compute, and the chunks
    /// cannot be sent before the keys are there anyway.
    public var chunker: ContentDefinedChunker {
        state.withLock { state in
            guard let newest = state.view.keyring?.newestEpoch, let keys = state.keys[newest] else {
                var generator = SystemRandomNumberGenerator()
                let standard = ContentDefinedChunker.standard
                return ContentDefinedChunker(
                    minSize: standard.minSize, averageSize: standard.averageSize, maxSize: standard.maxSize,
                    gearTable: (0..<256).map { _ in generator.next() })
            }
            if let (epoch, chunker) = state.chunker, epoch == newest { return chunker }
            let chunker = keys.chunker
            state.chunker = (newest, chunker)
            return chunker
        }
    }

    /// Reads the container first if it has not been read yet (a mount that started offline).
    private func readOnce() async throws(ContainerProtocolError) {
        if state.withLock({ $0.view.head == nil }) { try await catchUp() }
    }

    private func newestKeys() async throws(ContainerProtocolError) -> EpochKeys {
        try await readOnce()
        return try state.withLock { state throws(ContainerProtocolError) in
            guard let newest = state.view.keyring?.newestEpoch, let keys = state.keys[newest] else {
                throw ContainerProtocolError.invalidRequest("this device holds no key of the newest epoch")
            }
            return keys
        }
    }

    public func missingChunks(_ hashes: [ChunkHash]) async throws(ContainerProtocolError) -> [ChunkHash] {
        try checkAlarm()
        let keys = try await newestKeys()
        let ids = hashes.map(keys.chunkID(for:))
        let missing = Set(try await inner.missingChunks(ids))
        return zip(hashes, ids).compactMap { missing.contains($0.1) ? $0.0 : nil }
    }

    public func putChunk(_ chunk: EncodedChunk) async throws(ContainerProtocolError) {
        try await putChunks([chunk])
    }

    public func putChunks(_ chunks: [EncodedChunk]) async throws(ContainerProtocolError) {
        try checkAlarm()
        try CommitBatch.check(chunks)
        let keys = try await newestKeys()
        var sealed: [EncodedChunk] = []
        for chunk in chunks {
            // The engine's own chunks (its encoder made them): sealed as they are. A reader checks
            // the plain hash when it opens one.
            guard chunk.encoding == .raw || chunk.encoding == .zlib else {
                throw .invalidRequest("chunk \(chunk.hash) is not a plain chunk")
            }
            try ChunkValidation.check(chunk)
            let box = SealedChunkCodec.seal(chunk, keys: keys)
            sealed.append(
                EncodedChunk(hash: box.id, encoding: .sealed, plainLength: box.envelope.count, payload: box.envelope))
        }
        try await inner.putChunks(sealed)
        state.withLock { state in
            for chunk in chunks where state.chunkEpochs[chunk.hash] == nil {
                state.chunkEpochs[chunk.hash] = keys.epoch
            }
        }
    }

    public func chunk(_ hash: ChunkHash) async throws(ContainerProtocolError) -> EncodedChunk {
        try checkAlarm()
        try await readOnce()
        let (first, all) = try state.withLock { state throws(ContainerProtocolError) in
            guard let newest = state.view.keyring?.newestEpoch else {
                throw ContainerProtocolError.invalidRequest("the sealed container is not open")
            }
            return (state.chunkEpochs[hash] ?? newest, state.keys)
        }
        let order = [first] + all.keys.sorted(by: >).filter { $0 != first }
        for epoch in order {
            guard let keys = all[epoch] else { continue }
            let stored: EncodedChunk
            do {
                stored = try await inner.chunk(keys.chunkID(for: hash))
            } catch .chunkNotFound {
                continue
            }
            guard stored.encoding == .sealed else { throw .corruptChunk(hash) }
            do {
                return try SealedChunkCodec.open(
                    SealedChunk(id: stored.hash, envelope: stored.payload), as: hash, keys: keys)
            } catch {
                throw .corruptChunk(hash)
            }
        }
        throw .chunkNotFound(hash)
    }

}
