/// Advisory locks that hold across every mount of a container (flock and fcntl byte ranges), as
/// leases: a lock is granted for `leaseSeconds`, the holder renews it while it holds it, and a
/// holder that stops renewing (crash, lost network) loses it when the lease expires. Containers
/// that keep locks conform beside `Container`; wrappers forward it. Every implementation applies
/// the same algorithm, `LockTable`.
///
/// Contracts every implementation keeps (`Tests/SyncBackendTests/ContainerLocksConformanceTests.swift`):
/// - A lock belongs to `(session, owner)`: `session` is one mount run's random ID (new at each
///   mount start), `owner` the kernel's lock owner within that mount. `holderName` only shows
///   who holds it (a device name).
/// - `flock` and `posix` locks are independent (as on Linux: a flock never conflicts with a posix
///   lock). A flock covers the whole file: the range of a flock claim or release is ignored and
///   stored as `LockRange.wholeFile`.
/// - `lock` conflicts with a lock of another `(session, owner)` on the same file, of the same
///   kind, whose range overlaps, when either is exclusive and that lock's lease has not expired;
///   then the answer is `.blocked(by:)` one such lock and nothing changed. Otherwise it is
///   `.granted(expiresAt:)` and the owner's own locks follow fcntl: the claimed range replaces
///   the owner's overlapping ranges of that kind (split around it; the mode of the range becomes
///   the claimed one), and touching or overlapping ranges of one mode merge. A flock claim
///   replaces the owner's flock (upgrade or downgrade).
/// - `unlock` removes the range from the owner's locks of that kind (splitting them); for a flock
///   it removes the owner's flock. Unlocking what is not held is not an error.
/// - `renewLocks(session:leaseSeconds:)` extends every unexpired lease of the session to
///   `now + leaseSeconds` and answers every lock the session still holds; a lock the session
///   had and that is missing was lost (its lease expired, and another holder may have taken it):
///   the caller tells the user.
/// - `releaseLocks(session:)` drops every lock of the session (unmount).
/// - `locks(on:)` lists the unexpired locks of a file, ordered by kind, range start, session, owner.
/// - A session is a bearer secret (whoever knows it may renew, unlock or release its locks): a
///   container reached through a server shows another holder's session as its public ID
///   (`LockSession.publicID`) in listings and blocking locks; a caller's own sessions show as
///   themselves.
/// - Expiry is by the container's clock (`HeldLock.expiresAt`, nanoseconds since the Unix epoch);
///   an expired lease is ignored everywhere, and each claim deletes every expired lease of the
///   container, so stored locks never outnumber `LockLimits.maxLocksPerContainer` however many
///   leases were left to expire. Locks are stored state: a server restart keeps them (their
///   leases run on).
/// - Bad input is `invalidRequest`: `leaseSeconds` outside `LockLimits.leaseSeconds`, a range
///   whose start is after its end, a holder name that is empty, over
///   `LockLimits.maxHolderNameBytes` or holds control characters, and a grant that would leave
///   a session holding more than `LockLimits.maxLocksPerSession` locks, a file more than
///   `LockLimits.maxLocksPerFile` or the container more than `LockLimits.maxLocksPerContainer`
///   (limits against a hostile token holder; a claim that adds no lock is never refused by them).
public protocol ContainerLocks: Sendable {
    func lock(_ claim: LockClaim, leaseSeconds: Int) async throws(ContainerProtocolError) -> LockAnswer
    func unlock(_ release: LockRelease) async throws(ContainerProtocolError)
    func renewLocks(session: LockSession, leaseSeconds: Int) async throws(ContainerProtocolError) -> [HeldLock]
    func releaseLocks(session: LockSession) async throws(ContainerProtocolError)
    func locks(on fileID: FileID) async throws(ContainerProtocolError) -> [HeldLock]
}

/// Which lock family: BSD `flock` (whole file) or POSIX `fcntl` byte ranges. Independent.
public enum LockKind: String, Sendable, Codable, Hashable, Comparable, CaseIterable {
    case flock
    case posix

    public static func < (lhs: LockKind, rhs: LockKind) -> Bool { lhs == .flock && rhs == .posix }
}

/// Shared (read) or exclusive (write).
public enum LockMode: String, Sendable, Codable, Hashable, CaseIterable {
    case shared
    case exclusive
}

/// Bytes `start...end` of a file, both inclusive; `end == UInt64.max` means to the end of the
/// file, however long it grows.
public struct LockRange: Hashable, Sendable, Codable, CustomStringConvertible {
    public var start: UInt64
    public var end: UInt64

    /// The whole file (every flock, and an fcntl lock of 0 bytes at 0).
    public static let wholeFile = LockRange(start: 0, end: .max)

    public init(start: UInt64, end: UInt64) {
        self.start = start
        self.end = end
    }

    /// False for a malformed range (start after end).
    public var isValid: Bool { start <= end }

    public func overlaps(_ other: LockRange) -> Bool { start <= other.end && other.start <= end }

    /// Overlapping or adjacent (one ends just before the other starts): such ranges of one mode merge.
    public func touches(_ other: LockRange) -> Bool {
        overlaps(other) || (end != .max && end + 1 == other.start) || (other.end != .max && other.end + 1 == start)
    }

    public var description: String { end == .max ? "\(start)-EOF" : "\(start)-\(end)" }
}

/// One mount run's lock identity: 32 lowercase hex digits, random, new at each mount start.
public struct LockSession: Hashable, Sendable, Comparable, CustomStringConvertible, HexEncodedValue {
    public let hex: String

    public init?(hex: String) {
        guard FileID(hex: hex) != nil else { return nil }
        self.hex = hex
    }

    public static func random() -> LockSession {
        // A random FileID's textual form is 32 lowercase hex digits.
        LockSession(hex: FileID.random().hex)!
    }

    public static func < (lhs: LockSession, rhs: LockSession) -> Bool { lhs.hex < rhs.hex }

    public var description: String { hex }
}

/// A request for a lock.
public struct LockClaim: Hashable, Sendable, Codable {
    public var fileID: FileID
    public var kind: LockKind
    public var mode: LockMode
    /// Ignored for a flock (always the whole file).
    public var range: LockRange
    public var session: LockSession
    public var owner: UInt64
    /// Who holds it, for display: a device name (`LockLimits.maxHolderNameBytes`).
    public var holderName: String

    public init(
        fileID: FileID, kind: LockKind, mode: LockMode, range: LockRange = .wholeFile, session: LockSession,
        owner: UInt64, holderName: String
    ) {
        self.fileID = fileID
        self.kind = kind
        self.mode = mode
        self.range = range
        self.session = session
        self.owner = owner
        self.holderName = holderName
    }
}

/// A request to give up (part of) a lock.
public struct LockRelease: Hashable, Sendable, Codable {
    public var fileID: FileID
    public var kind: LockKind
    /// Ignored for a flock (the owner's flock goes whole).
    public var range: LockRange
    public var session: LockSession
    public var owner: UInt64

    public init(fileID: FileID, kind: LockKind, range: LockRange = .wholeFile, session: LockSession, owner: UInt64) {
        self.fileID = fileID
        self.kind = kind
        self.range = range
        self.session = session
        self.owner = owner
    }
}

/// A lock a container holds for someone, until `expiresAt` (the container's clock,
/// nanoseconds since the Unix epoch).
public struct HeldLock: Hashable, Sendable, Codable {
    public var fileID: FileID
    public var kind: LockKind
    public var mode: LockMode
    public var range: LockRange
    public var session: LockSession
    public var owner: UInt64
    public var holderName: String
    public var expiresAt: Int64

    public init(
        fileID: FileID, kind: LockKind, mode: LockMode, range: LockRange, session: LockSession, owner: UInt64,
        holderName: String, expiresAt: Int64
    ) {
        self.fileID = fileID
        self.kind = kind
        self.mode = mode
        self.range = range
        self.session = session
        self.owner = owner
        self.holderName = holderName
        self.expiresAt = expiresAt
    }

    /// Whether the lease still runs at `now`.
    public func isLive(at now: Int64) -> Bool { expiresAt > now }

    /// Whether this lock belongs to `(session, owner)`.
    public func isHeld(by session: LockSession, owner: UInt64) -> Bool {
        self.session == session && self.owner == owner
    }
}

/// The answer to a lock claim.
public enum LockAnswer: Hashable, Sendable {
    /// Granted; the lease runs until `expiresAt` (the container's clock, nanoseconds).
    case granted(expiresAt: Int64)
    /// Someone else holds a conflicting lock; nothing changed.
    case blocked(by: HeldLock)
}

/// The bounds of lock requests.
public enum LockLimits {
    /// A lease lasts 5 seconds to 10 minutes.
    public static let leaseSeconds = 5...600
    /// The most locks one session holds (each disjoint range of an owner is one lock).
    public static let maxLocksPerSession = 1_024
    /// The most locks one file holds (all sessions together): bounds a file's lock list.
    public static let maxLocksPerFile = 4_096
    /// The most locks one container holds (all sessions together).
    public static let maxLocksPerContainer = 100_000
    /// A holder name: 1...128 bytes of UTF-8 without control characters.
    public static let maxHolderNameBytes = 128

    /// `seconds` if acceptable, else `invalidRequest`.
    public static func lease(_ seconds: Int) throws(ContainerProtocolError) -> Int {
        guard leaseSeconds.contains(seconds) else {
            throw .invalidRequest(
                "a lock lease lasts \(leaseSeconds.lowerBound)...\(leaseSeconds.upperBound) seconds, not \(seconds)")
        }
        return seconds
    }

    /// Why `name` is not an acceptable holder name, or nil.
    public static func problem(withHolderName name: String) -> String? {
        if name.isEmpty { return "a lock's holder name is empty" }
        if name.utf8.count > maxHolderNameBytes { return "a lock's holder name is over \(maxHolderNameBytes) bytes" }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "a lock's holder name holds control characters"
        }
        return nil
    }
}
