import SyncBackend

/// A stored entry the ledger vouches for: the container's entry as stored, and the digest of its
/// sealed bytes that the newest ledger entry naming it holds.
struct VouchedEntry: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        /// An entry's sealed record: what the engine sees, decrypted.
        case record
        /// A ledger entry or a keyring: the format's own, never shown to the engine.
        case ledger, keyring
    }

    var kind: Kind
    var stored: RemoteEntry
    var sealed: [UInt8]
    var digest: [UInt8]
    /// The ledger change that vouched for this version.
    var spot: FeedSpot
    /// The device name that ledger entry signed for its changes.
    var device: String
}

/// The checked view of a sealed container's feed: read every entry of the container underneath in
/// feed order (`read`), then `settle` at the end of the feed. What it holds afterwards is vouched
/// for by the ledger: the ledger's head, the keyring in force, and for every entry the stored
/// version that the newest ledger entry naming it names.
///
/// How the feed is read. A commit stores its records, the keyring it publishes (if any) and its
/// ledger entry in one all-or-nothing call, the ledger entry last, so in the feed a record comes
/// before the ledger entry that vouches for it. The feed shows each entry once, at its newest
/// version: a record changed again later shows up only before the later commit's ledger entry,
/// which then vouches for it. Ledger entries and keyrings are entries of their own, never changed,
/// so every one of them is shown, in order. So:
/// - an entry that is not the next ledger entry waits, unvouched;
/// - the next ledger entry is checked (container, previous digest, signer in the keyring in force
///   before it, signature); each change it names is vouched for if the waiting entry has that
///   digest (and deletion state), else the change is expected later;
/// - at the end of the feed nothing may wait (`unvouched`) and nothing may still be expected
///   (`withheld`); a ledger entry other than the next is `ledgerOutOfOrder`.
struct LedgerView {
    private(set) var container: SealedContainerID?
    private(set) var head: LedgerHead?
    /// The genesis entry's digest: what the safety code names.
    private(set) var genesis: [UInt8]?
    /// Who signed the genesis: the recovery key (`SealedContainer.create`), which a device that
    /// joins with the recovery key checks.
    private(set) var genesisSigner: [UInt8]?
    /// Requests to join, by the requesting device's entry (outside the ledger: never vouched).
    private(set) var joinRequests: [FileID: JoinRequest] = [:]
    private(set) var keyring: Keyring?
    /// The ledger entry that started the newest key epoch (every removal starts one).
    private(set) var newestEpochStarted: UInt64 = 0
    private(set) var vouched: [FileID: VouchedEntry] = [:]
    /// Every record any ledger entry read so far named, with the device name that entry signed:
    /// what a historic version must be to be shown (`SealedContainer+History.swift`).
    private(set) var named: [NamedRecord: Voucher] = [:]
    /// Entries read that no ledger entry has vouched for yet.
    private var waiting: [FileID: RemoteEntry] = [:]
    /// Changes a ledger entry named whose entry has not been read with that digest yet.
    private var expected: [FileID: Naming] = [:]

    /// A change as a ledger entry names it, with what the entry says of all its changes.
    private struct Naming {
        var change: LedgerChange
        var spot: FeedSpot
        var device: String
        /// The ledger entry's epoch: every record it names is sealed under it.
        var epoch: KeyEpoch
    }
    /// The entries vouched for since `takeChanged`, in the order vouched.
    private var changed: [FileID] = []
    /// The head this device saw before (kept across mounts): the feed must reach it, through it.
    private let knownHead: LedgerHead?

    init(knownHead: LedgerHead? = nil) {
        self.knownHead = knownHead
    }

    /// The next entry of the feed.
    mutating func read(_ entry: RemoteEntry) throws(SealedAlarm) {
        let next = (head?.sequence ?? 0) + 1
        if entry.id == LedgerEntry.fileID(of: next) {
            try accept(ledgerEntry: entry, sequence: next)
            return
        }
        if let claimed = Self.claimedLedgerSequence(of: entry) {
            throw .ledgerOutOfOrder(expected: next, found: claimed)
        }
        if let request = Self.joinRequest(in: entry) {
            joinRequests[entry.id] = entry.isDeleted ? nil : request
            return
        }
        waiting[entry.id] = entry
        if let naming = expected[entry.id] { try vouch(naming) }
    }

    /// The sequence `entry` claims if it is stored as a ledger entry at its sequence's place.
    private static func claimedLedgerSequence(of entry: RemoteEntry) -> UInt64? {
        guard let sealed = OpaqueEntry.sealed(from: entry.state, of: entry.id) else { return nil }
        do {
            let claimed = try LedgerEntry(encoded: sealed)
            return entry.id == LedgerEntry.fileID(of: claimed.sequence) ? claimed.sequence : nil
        } catch {
            return nil
        }
    }

    /// The join request `entry` holds, if it is stored as one at its device's place.
    static func joinRequest(in entry: RemoteEntry) -> JoinRequest? {
        guard let sealed = OpaqueEntry.sealed(from: entry.state, of: entry.id) else { return nil }
        do {
            let request = try JoinRequest(encoded: sealed)
            return entry.id == JoinRequest.fileID(of: request.device) ? request : nil
        } catch {
            return nil
        }
    }

    /// At the end of the feed: everything read is vouched for and every named change was read.
    mutating func settle() throws(SealedAlarm) {
        if let known = knownHead {
            guard let head, head.sequence >= known.sequence else {
                throw .rolledBack(known: known.sequence, shown: head?.sequence ?? 0)
            }
        }
        if !waiting.isEmpty { throw .unvouched(waiting.keys.sorted { $0.hex < $1.hex }) }
        if !expected.isEmpty { throw .withheld(expected.keys.sorted { $0.hex < $1.hex }) }
    }

    /// The entries vouched for since the last call, each once, in the order vouched.
    mutating func takeChanged() -> [FileID] {
        var seen = Set<FileID>()
        let ids = changed.filter { seen.insert($0).inserted }
        changed.removeAll()
        return ids
    }

    private mutating func accept(ledgerEntry stored: RemoteEntry, sequence: UInt64) throws(SealedAlarm) {
        guard !stored.isDeleted, let sealed = OpaqueEntry.sealed(from: stored.state, of: stored.id) else {
            throw .ledgerBroken(sequence: sequence, reason: "it is not stored as a ledger entry")
        }
        let entry: LedgerEntry
        do {
            entry = try LedgerEntry(encoded: sealed)
        } catch {
            throw .ledgerBroken(sequence: sequence, reason: error.description)
        }
        guard entry.sequence == sequence else { throw .ledgerOutOfOrder(expected: sequence, found: entry.sequence) }
        guard entry.previous == (head?.digest ?? LedgerEntry.genesisPrevious) else {
            throw .ledgerBroken(sequence: sequence, reason: "it does not follow the entry before it (a fork)")
        }
        if let container {
            guard entry.container == container else {
                throw .ledgerBroken(sequence: sequence, reason: "it belongs to another container")
            }
        }
        let published = try publishedKeyring(by: entry)
        // The signer must be a member before this entry; the genesis is signed by the member it
        // makes (the device's trust in it comes from the safety code or the recovery key).
        guard let signerRing = sequence == 1 ? published : keyring, let signer = signerRing.signer(entry.signer),
            entry.isSigned(by: signer)
        else { throw .ledgerBroken(sequence: sequence, reason: "it is not signed by a member") }
        let ring = published ?? keyring
        guard let ring, entry.epoch == ring.newestEpoch, ring.container == entry.container else {
            throw .ledgerBroken(sequence: sequence, reason: "its epoch or container differs from the keyring's")
        }
        if let known = knownHead, known.sequence == sequence, known.digest != entry.digest {
            throw .rolledBack(known: known.sequence, shown: sequence)
        }
        container = entry.container
        if ring.newestEpoch != keyring?.newestEpoch { newestEpochStarted = sequence }
        keyring = ring
        head = LedgerHead(sequence: sequence, digest: entry.digest)
        if sequence == 1 {
            genesis = entry.digest
            genesisSigner = entry.signer
        }
        vouched[stored.id] = VouchedEntry(
            kind: .ledger, stored: stored, sealed: sealed, digest: entry.digest,
            spot: FeedSpot(sequence: sequence, index: entry.changes.count), device: entry.device)
        for (index, change) in entry.changes.enumerated() {
            named[NamedRecord(change)] = Voucher(spot: FeedSpot(sequence: sequence, index: index), device: entry.device)
        }
        for (index, change) in entry.changes.enumerated() where change.id != Keyring.fileID(publishedIn: sequence) {
            let spot = FeedSpot(sequence: sequence, index: index)
            let naming = Naming(change: change, spot: spot, device: entry.device, epoch: entry.epoch)
            expected[change.id] = naming
            if waiting[change.id] != nil { try vouch(naming) }
        }
    }

    /// The keyring `entry` publishes, checked against the one in force, or nil if it publishes none.
    private mutating func publishedKeyring(by entry: LedgerEntry) throws(SealedAlarm) -> Keyring? {
        let id = Keyring.fileID(publishedIn: entry.sequence)
        guard let index = entry.changes.firstIndex(where: { $0.id == id }) else {
            guard entry.sequence != 1 else {
                throw .ledgerBroken(sequence: 1, reason: "the genesis publishes no keyring")
            }
            return nil
        }
        let change = entry.changes[index]
        guard let stored = waiting[id], !change.deleted, !stored.isDeleted,
            let sealed = OpaqueEntry.sealed(from: stored.state, of: id), SealedRecord.digest(sealed) == change.digest
        else { throw .ledgerBroken(sequence: entry.sequence, reason: "the keyring it publishes is missing or changed") }
        let ring: Keyring
        do {
            ring = try Keyring(encoded: sealed)
        } catch {
            throw .ledgerBroken(sequence: entry.sequence, reason: "its keyring: \(error)")
        }
        if let previous = keyring {
            if let problem = KeyringRules.problem(from: previous, to: ring, publishedIn: entry.sequence) {
                throw .ledgerBroken(sequence: entry.sequence, reason: problem)
            }
        } else if !ring.members.allSatisfy({ $0.addedIn == entry.sequence }) {
            throw .ledgerBroken(sequence: entry.sequence, reason: "its first keyring adds members in other entries")
        }
        waiting[id] = nil
        vouched[id] = VouchedEntry(
            kind: .keyring, stored: stored, sealed: sealed, digest: change.digest,
            spot: FeedSpot(sequence: entry.sequence, index: index), device: entry.device)
        return ring
    }

    /// Vouches for the waiting entry of `change` if it is the one the change names.
    private mutating func vouch(_ naming: Naming) throws(SealedAlarm) {
        let change = naming.change
        guard let stored = waiting[change.id], stored.isDeleted == change.deleted,
            let sealed = OpaqueEntry.sealed(from: stored.state, of: stored.id),
            SealedRecord.digest(sealed) == change.digest
        else { return }
        if let earlier = vouched[change.id], earlier.stored.version >= stored.version {
            throw .unvouched([change.id])
        }
        // A record written is sealed under the epoch its ledger entry is in (so a member that did
        // not see a removal cannot go on writing for the removed device); a deletion names the
        // record it deletes, which may be older.
        if !change.deleted {
            let epoch: KeyEpoch
            do {
                epoch = try SealedRecord.epoch(of: sealed)
            } catch {
                throw .unreadable(change.id, error.description)
            }
            guard epoch == naming.epoch else {
                throw .ledgerBroken(
                    sequence: naming.spot.sequence,
                    reason: "it names a record of \(change.id) sealed under epoch \(epoch), not its own \(naming.epoch)"
                )
            }
        }
        waiting[change.id] = nil
        expected[change.id] = nil
        vouched[change.id] = VouchedEntry(
            kind: .record, stored: stored, sealed: sealed, digest: change.digest, spot: naming.spot,
            device: naming.device)
        changed.append(change.id)
    }
}

/// How a keyring may change from one ledger entry to the next: same container and recovery key;
/// epochs only added, one at a time, each old epoch's wraps kept (a device may be given an old
/// epoch, never lose one); a member removed only together with a new epoch that is not wrapped to
/// it; a member added in the entry that publishes the keyring, and every other member's entry
/// kept (what `SealedContainer.admission(of:)` names).
enum KeyringRules {
    static func problem(from old: Keyring, to new: Keyring, publishedIn sequence: UInt64) -> String? {
        guard new.container == old.container else { return "its keyring names another container" }
        guard new.recovery == old.recovery else { return "its keyring changes the recovery key" }
        guard new.epochs.count == old.epochs.count || new.epochs.count == old.epochs.count + 1 else {
            return "its keyring adds or drops several epochs"
        }
        for (before, after) in zip(old.epochs, new.epochs) {
            for (recipient, wrapped) in before.wraps where after.wraps[recipient] != wrapped {
                return "its keyring changes epoch \(before.epoch)'s secret for a device"
            }
        }
        let staying = Set(new.members.map(\.identity.signing))
        let removed = old.members.filter { !staying.contains($0.identity.signing) }
        for member in old.members where staying.contains(member.identity.signing) {
            guard new.members.contains(where: { $0.identity == member.identity }) else {
                return "its keyring changes a member's keys"
            }
            guard new.members.contains(member) else { return "its keyring changes when a member was added" }
        }
        let known = Set(old.members.map(\.identity.signing))
        for member in new.members where !known.contains(member.identity.signing) {
            guard member.addedIn == sequence else { return "its keyring adds a member in another entry than itself" }
        }
        if !removed.isEmpty {
            guard new.epochs.count == old.epochs.count + 1, let newest = new.epochs.last,
                removed.allSatisfy({ newest.wraps[$0.identity.signing] == nil })
            else { return "its keyring removes a member without a new epoch kept from it" }
        }
        return nil
    }
}

/// Where a ledger entry named a record, and the device name it signed.
struct Voucher: Sendable {
    var spot: FeedSpot
    var device: String
}

/// A record a ledger entry named: the entry, the record's digest and whether it is the entry's
/// deletion (a tombstone names the record of the last live version).
struct NamedRecord: Hashable, Sendable {
    var id: FileID
    var digest: [UInt8]
    var deleted: Bool

    init(id: FileID, digest: [UInt8], deleted: Bool) {
        self.id = id
        self.digest = digest
        self.deleted = deleted
    }

    init(_ change: LedgerChange) {
        self.init(id: change.id, digest: change.digest, deleted: change.deleted)
    }
}
