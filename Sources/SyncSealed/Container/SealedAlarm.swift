import SyncBackend

/// What a reader of a sealed container found that no member made: the container underneath (the
/// server) changed, dropped, injected or replayed something, or showed an old or forked state.
/// A mount that meets one stops applying remote changes, keeps everything local, and reports it
/// (`status`, an event, the log); nothing the alarm names is ever uploaded or applied.
public enum SealedAlarm: Error, Equatable, Sendable, CustomStringConvertible {
    /// A ledger entry other than the next one: a gap (entries hidden), a fork or a replay.
    case ledgerOutOfOrder(expected: UInt64, found: UInt64)
    /// The next ledger entry does not hold: its signature, signer, previous digest, container, or
    /// the keyring it publishes.
    case ledgerBroken(sequence: UInt64, reason: String)
    /// The feed ends below a ledger entry this device has already seen, or shows another entry
    /// at that sequence.
    case rolledBack(known: UInt64, shown: UInt64)
    /// Entries no ledger entry vouches for: injected, replayed, or changed by the server.
    case unvouched([FileID])
    /// Changes a ledger entry names that the feed never showed: dropped by the server.
    case withheld([FileID])
    /// The container answered that this device's commit was stored, and then did not show it.
    case commitNotStored(sequence: UInt64)
    /// A record the ledger vouches for that does not open with the epoch's key.
    case unreadable(FileID, String)
    /// Vouched changes that leave the tree broken (a member's client broke the rules).
    case treeBroken(String)

    public var description: String {
        switch self {
        case .ledgerOutOfOrder(let expected, let found):
            "the server showed ledger entry \(found) where \(expected) was due (hidden, forked or replayed commits)"
        case .ledgerBroken(let sequence, let reason): "ledger entry \(sequence) does not hold: \(reason)"
        case .rolledBack(let known, let shown):
            "the server rolled the container back or forked it: this device has seen ledger entry \(known), the server shows \(shown) (or another entry there)"
        case .unvouched(let ids):
            "the server shows \(ids.count) entries no member committed (first: \(ids.first.map(\.hex) ?? "-"))"
        case .withheld(let ids):
            "the server withholds \(ids.count) committed changes (first: \(ids.first.map(\.hex) ?? "-"))"
        case .commitNotStored(let sequence):
            "the server said this device's commit (ledger entry \(sequence)) was stored, and does not show it"
        case .unreadable(let id, let reason): "the record of \(id) does not open: \(reason)"
        case .treeBroken(let reason): "a commit broke the tree: \(reason)"
        }
    }
}

/// The newest ledger entry a reader has checked: its sequence and digest. A device keeps it
/// (`SealedHeadFile`) so that a server showing less, or another entry there, is caught.
public struct LedgerHead: Equatable, Sendable {
    public var sequence: UInt64
    public var digest: [UInt8]

    public init(sequence: UInt64, digest: [UInt8]) {
        self.sequence = sequence
        self.digest = digest
    }
}
