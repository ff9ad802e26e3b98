import Foundation
import SyncBackend

/// Who holds locks on one file, for `status PATH` and `user.syncfs.lock`: the container's
/// answer (every mount's live locks) joined with this mount's own, which are `localOnly` while
/// the container has not taken them (offline, or a container that keeps no locks).
struct LockHolding: Sendable, Equatable {
    var holderName: String
    var kind: LockKind
    var mode: LockMode
    var range: LockRange
    /// When the lease ends (the container's clock, nanoseconds since the epoch); nil for a lock
    /// held here only.
    var expiresAt: Int64?
    var localOnly: Bool
    /// Held by a process on this mount.
    var thisMount: Bool

    /// `flock exclusive 0-EOF by 'laptop' until 2026-11-29T17:30:00Z` (or `… (local only)`).
    var line: String {
        var text = "\(kind.rawValue) \(mode.rawValue) \(range) by '\(holderName)'"
        if localOnly {
            text += " (local only)"
        } else if let expiresAt {
            text += " until \(Self.time(expiresAt))"
        }
        return text
    }

    static func time(_ nanoseconds: Int64) -> String {
        RFC3339.utc(Date(timeIntervalSince1970: Double(nanoseconds / 1_000_000_000)))
    }
}

extension MountLocks {
    /// The locks on `fileID` (see `LockHolding`), ordered by family and range start. Asks the
    /// container from the calling thread (waiting at most `ContainerLockCalls.callDeadline`), unless
    /// the book knows it unreachable; unreachable, only this mount's are listed, local only.
    func holdings(on fileID: FileID) -> [LockHolding] {
        let snapshot = book.snapshot
        var known: [HeldLock]?
        if book.offlineSince == nil {
            do throws(ContainerLockCalls.Failure) {
                known = try calls.locks(on: fileID).locks
            } catch {
                known = nil
            }
        }
        var holdings: [LockHolding] = []
        for lock in known ?? [] where lock.session != snapshot.session {
            holdings.append(
                LockHolding(
                    holderName: lock.holderName, kind: lock.kind, mode: lock.mode, range: lock.range,
                    expiresAt: lock.expiresAt, localOnly: false, thisMount: false))
        }
        for lock in snapshot.locks(on: fileID) {
            let key = LockKey(fileID: lock.fileID, kind: lock.kind, owner: lock.owner)
            let atContainer = known?.first {
                $0.session == snapshot.session && $0.owner == lock.owner && $0.kind == lock.kind
                    && $0.range.overlaps(lock.range)
            }
            holdings.append(
                LockHolding(
                    holderName: snapshot.holderName, kind: lock.kind, mode: lock.mode, range: lock.range,
                    expiresAt: atContainer?.expiresAt, localOnly: snapshot.isLocalOnly(key) || known == nil,
                    thisMount: true))
        }
        return holdings.sorted { ($0.kind, $0.range.start) < ($1.kind, $1.range.start) }
    }

    /// `user.syncfs.lock`: every holding's `line`, joined by "; "; nil when none.
    func attributeLine(on fileID: FileID) -> String? {
        let holdings = holdings(on: fileID)
        return holdings.isEmpty ? nil : holdings.map(\.line).joined(separator: "; ")
    }
}
