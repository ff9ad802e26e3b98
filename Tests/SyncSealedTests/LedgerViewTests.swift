import SyncBackend
import Testing

@testable import SyncSealed

/// A container's stored entries as a plain server keeps them: each request takes the next version;
/// the feed shows each entry once, at its newest version, in version order.
struct StoredLog {
    var entries: [FileID: RemoteEntry] = [:]
    var version: EntryVersion = 0

    mutating func apply(_ requests: [CommitRequest]) {
        for request in requests {
            version += 1
            switch request.change {
            case .put(let state):
                entries[request.id] = RemoteEntry(
                    id: request.id, version: version, isDeleted: false, device: request.device, state: state)
            case .delete:
                var entry = entries[request.id]!
                entry.version = version
                entry.isDeleted = true
                entries[request.id] = entry
            }
        }
    }

    var feed: [RemoteEntry] { entries.values.sorted { $0.version < $1.version } }
}

/// A member device writing to a sealed container, the way the wrapper will.
struct Writer {
    let device = DeviceKeys.generate()
    let recovery = RecoveryKey.generate()
    let container = SealedContainerID.random()
    let secret = EpochSecret.random()
    var keyring: Keyring
    var head: LedgerHead?
    var log = StoredLog()

    init() {
        keyring = Keyring.genesis(
            container: container, creator: device.identity, recovery: recovery.deviceKeys.identity, secret: secret)
    }

    var keys: EpochKeys { EpochKeys(secret: secret, container: container, epoch: keyring.newestEpoch) }

    /// Commits `changes` (and `keyring`, if given) as the next ledger entry, signed by `signer`.
    @discardableResult
    mutating func commit(
        _ changes: [PlannedChange], publishing published: Keyring? = nil, signedBy signer: DeviceKeys? = nil
    ) -> [CommitRequest] {
        let sequence = (head?.sequence ?? 0) + 1
        if let published { keyring = published }
        let builder = SealedCommit(
            sequence: sequence, previous: head?.digest ?? LedgerEntry.genesisPrevious, keys: keys, device: "laptop",
            signer: signer ?? device, time: 1)
        let (requests, entry) = builder.requests(
            for: changes, publishing: sequence == 1 ? keyring : published)
        log.apply(requests)
        head = LedgerHead(sequence: sequence, digest: entry.digest)
        return requests
    }

    mutating func genesis() { commit([]) }

    func put(_ id: FileID, _ name: String, parent: FileID = .root, kind: NodeKind = .file) -> PlannedChange {
        let state = EntryState(parent: parent, name: Array(name.utf8), kind: kind, mode: 0o644, mtime: 5, size: 0)
        return PlannedChange(id: id, baseVersion: log.entries[id]?.version ?? 0, kind: .put(state))
    }

    func delete(_ id: FileID) -> PlannedChange {
        let stored = log.entries[id]!
        return PlannedChange(
            id: id, baseVersion: stored.version,
            kind: .delete(storedSealed: OpaqueEntry.sealed(from: stored.state, of: id)!))
    }
}

@Suite("The ledger view: what a reader accepts from the feed")
struct LedgerViewTests {
    static func read(_ feed: [RemoteEntry], knownHead: LedgerHead? = nil) throws(SealedAlarm) -> LedgerView {
        var view = LedgerView(knownHead: knownHead)
        for entry in feed { try view.read(entry) }
        try view.settle()
        return view
    }

    @Test func anHonestFeedIsVouchedForEvenWhenEntriesChangedAgain() throws {
        var writer = Writer()
        writer.genesis()
        let folder = FileID.random()
        let file = FileID.random()
        writer.commit([writer.put(folder, "docs", kind: .directory)])
        writer.commit([writer.put(file, "a.txt", parent: folder)])
        writer.commit([writer.put(folder, "papers", kind: .directory)])  // folded into one feed entry
        writer.commit([writer.delete(file)])
        let view = try Self.read(writer.log.feed)
        #expect(view.head == writer.head)
        #expect(view.vouched[folder]?.stored == writer.log.entries[folder])
        #expect(view.vouched[file]?.stored.isDeleted == true)
        #expect(view.keyring == writer.keyring)
    }

    @Test func aFeedReadInTwoPassesAgreesWithOneRead() throws {
        var writer = Writer()
        writer.genesis()
        let id = FileID.random()
        writer.commit([writer.put(id, "one")])
        var view = LedgerView()
        for entry in writer.log.feed { try view.read(entry) }
        try view.settle()
        #expect(view.takeChanged() == [id])
        let before = writer.log.version
        writer.commit([writer.put(id, "two")])
        for entry in writer.log.feed where entry.version > before { try view.read(entry) }
        try view.settle()
        #expect(view.takeChanged() == [id])
        #expect(view.head == writer.head)
    }

    // The attacks a server can make on the feed, each caught.

    @Test func aSwappedRecordIsNotVouchedFor() throws {
        var writer = Writer()
        writer.genesis()
        let first = FileID.random()
        let second = FileID.random()
        writer.commit([writer.put(first, "first"), writer.put(second, "second")])
        var feed = writer.log.feed
        let a = feed.firstIndex { $0.id == first }!
        let b = feed.firstIndex { $0.id == second }!
        (feed[a].state.xattrs, feed[b].state.xattrs) = (feed[b].state.xattrs, feed[a].state.xattrs)
        #expect(throws: SealedAlarm.self) { try Self.read(feed) }
    }

    @Test func anInjectedEntryIsRefused() {
        var writer = Writer()
        writer.genesis()
        var feed = writer.log.feed
        let forged = FileID.random()
        feed.append(
            RemoteEntry(
                id: forged, version: 99, isDeleted: false, device: "server",
                state: OpaqueEntry.state(
                    of: forged,
                    sealed: SealedRecord.seal(
                        EntryState(parent: .root, name: [0x78], kind: .file, mode: 0o644, mtime: 0, size: 0),
                        of: forged,
                        keys: EpochKeys(secret: .random(), container: writer.container, epoch: 0)), chunks: [])))
        #expect(throws: SealedAlarm.unvouched([forged])) { try Self.read(feed) }
    }

    @Test func aDroppedChangeIsCaught() {
        var writer = Writer()
        writer.genesis()
        let id = FileID.random()
        writer.commit([writer.put(id, "kept back")])
        let feed = writer.log.feed.filter { $0.id != id }
        #expect(throws: SealedAlarm.withheld([id])) { try Self.read(feed) }
    }

    @Test func anOldVersionReplayedAtANewVersionIsRefused() throws {
        var writer = Writer()
        writer.genesis()
        let id = FileID.random()
        writer.commit([writer.put(id, "old")])
        let old = writer.log.entries[id]!
        writer.commit([writer.put(id, "new")])
        var feed = writer.log.feed
        var replayed = old
        replayed.version = writer.log.version + 1
        feed.append(replayed)
        #expect(throws: SealedAlarm.unvouched([id])) { try Self.read(feed) }
        // And the old version shown in place of the new one is a withheld change.
        let stale = writer.log.feed.map { $0.id == id ? old : $0 }.sorted { $0.version < $1.version }
        #expect(throws: SealedAlarm.self) { try Self.read(stale) }
    }

    @Test func aHiddenLedgerEntryIsAGap() {
        var writer = Writer()
        writer.genesis()
        writer.commit([writer.put(.random(), "a")])
        writer.commit([writer.put(.random(), "b")])
        let hidden = LedgerEntry.fileID(of: 2)
        let feed = writer.log.feed.filter { $0.id != hidden }
        #expect(throws: SealedAlarm.ledgerOutOfOrder(expected: 2, found: 3)) { try Self.read(feed) }
    }

    @Test func aRollbackBelowTheKnownHeadIsCaught() throws {
        var writer = Writer()
        writer.genesis()
        writer.commit([writer.put(.random(), "a")])
        let old = writer.log
        writer.commit([writer.put(.random(), "b")])
        let known = writer.head!
        #expect(throws: SealedAlarm.rolledBack(known: 3, shown: 2)) { try Self.read(old.feed, knownHead: known) }
        #expect(try Self.read(writer.log.feed, knownHead: known).head == known)
    }

    @Test func aForkIsCaughtWhereTheHistoriesMeet() {
        var writer = Writer()
        writer.genesis()
        writer.commit([writer.put(.random(), "shared")])
        var other = writer
        writer.commit([writer.put(.random(), "seen by this device")])
        other.commit([other.put(.random(), "shown to another device")])
        // This device saw entry 3 of its branch; the server now shows the other branch.
        #expect(throws: SealedAlarm.rolledBack(known: 3, shown: 3)) {
            try Self.read(other.log.feed, knownHead: writer.head)
        }
    }

    @Test func aLedgerEntryByANonMemberIsRefused() {
        var writer = Writer()
        writer.genesis()
        writer.commit([writer.put(.random(), "forged")], signedBy: .generate())
        #expect(throws: SealedAlarm.ledgerBroken(sequence: 2, reason: "it is not signed by a member")) {
            try Self.read(writer.log.feed)
        }
    }

    @Test func aLedgerEntryOfAnotherVersionIsRefused() {
        var writer = Writer()
        writer.genesis()
        writer.commit([writer.put(.random(), "a")])
        let ledger = LedgerEntry.fileID(of: 2)
        let feed = writer.log.feed.map { entry -> RemoteEntry in
            guard entry.id == ledger else { return entry }
            var sealed = OpaqueEntry.sealed(from: entry.state, of: entry.id)!
            sealed[0] = 2
            var changed = entry
            changed.state = OpaqueEntry.state(of: entry.id, sealed: sealed, chunks: [])
            return changed
        }
        #expect(throws: SealedAlarm.self) { try Self.read(feed) }
    }

    @Test func aKeyringThatChangesTheRecoveryKeyIsRefused() {
        var writer = Writer()
        writer.genesis()
        let stolen = Keyring.genesis(
            container: writer.container, creator: writer.device.identity,
            recovery: RecoveryKey.generate().deviceKeys.identity, secret: writer.secret)
        writer.commit([], publishing: stolen)
        #expect(throws: SealedAlarm.ledgerBroken(sequence: 2, reason: "its keyring changes the recovery key")) {
            try Self.read(writer.log.feed)
        }
    }

    @Test func aMemberRemovedWithoutANewEpochIsRefused() throws {
        var writer = Writer()
        writer.genesis()
        let laptop = DeviceKeys.generate()
        writer.commit([], publishing: writer.keyring.adding(laptop.identity, in: 2, secrets: [0: writer.secret]))
        _ = try Self.read(writer.log.feed)
        var keyring = writer.keyring.removing(laptop.identity.signing, newSecret: .random())
        // Keep the old epochs only: the removal is then without a new epoch.
        keyring = try Keyring(
            encoded: Keyring(
                container: keyring.container, recovery: keyring.recovery, members: keyring.members,
                epochs: Array(keyring.epochs.dropLast())
            ).encoded)
        writer.commit([], publishing: keyring)
        #expect(
            throws: SealedAlarm.ledgerBroken(
                sequence: 3, reason: "its keyring removes a member without a new epoch kept from it")
        ) { try Self.read(writer.log.feed) }
    }
}
