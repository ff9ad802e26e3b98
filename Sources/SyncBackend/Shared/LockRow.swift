/// A held lock as a database row stores it (the local container's `locks`, PostgreSQL's
/// `syncfs_locks`): IDs as hex text, kind and mode by name, and the 64-bit unsigned owner and
/// range as the bit pattern of a signed integer (so `UInt64.max`, "to the end of the file", is -1).
public struct LockRow: Hashable, Sendable {
    public var fileID: String
    public var kind: String
    public var session: String
    public var owner: Int64
    public var rangeStart: Int64
    public var rangeEnd: Int64
    public var mode: String
    public var holder: String
    public var expiresAt: Int64

    public init(
        fileID: String, kind: String, session: String, owner: Int64, rangeStart: Int64, rangeEnd: Int64,
        mode: String, holder: String, expiresAt: Int64
    ) {
        self.fileID = fileID
        self.kind = kind
        self.session = session
        self.owner = owner
        self.rangeStart = rangeStart
        self.rangeEnd = rangeEnd
        self.mode = mode
        self.holder = holder
        self.expiresAt = expiresAt
    }

    public init(_ lock: HeldLock) {
        self.init(
            fileID: lock.fileID.hex, kind: lock.kind.rawValue, session: lock.session.hex,
            owner: Int64(bitPattern: lock.owner), rangeStart: Int64(bitPattern: lock.range.start),
            rangeEnd: Int64(bitPattern: lock.range.end), mode: lock.mode.rawValue, holder: lock.holderName,
            expiresAt: lock.expiresAt)
    }

    /// The lock this row stores; `storageFailure` for a row that does not decode.
    public func lock() throws(ContainerProtocolError) -> HeldLock {
        let range = LockRange(start: UInt64(bitPattern: rangeStart), end: UInt64(bitPattern: rangeEnd))
        guard let id = FileID(hex: fileID), let kind = LockKind(rawValue: kind),
            let session = LockSession(hex: session), let mode = LockMode(rawValue: mode), range.isValid
        else {
            throw .storageFailure("a stored lock on \(fileID) does not decode")
        }
        return HeldLock(
            fileID: id, kind: kind, mode: mode, range: range, session: session, owner: UInt64(bitPattern: owner),
            holderName: holder, expiresAt: expiresAt)
    }
}
