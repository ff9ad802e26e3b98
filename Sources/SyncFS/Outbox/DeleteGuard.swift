import Foundation
import SyncBackend
import Synchronization

/// A tripped mass-delete guard, as the state database keeps it (fact `guard_hold`), so the hold
/// survives a restart of the daemon.
struct GuardHold: Sendable, Equatable {
    /// When the guard tripped.
    var since: Date
    /// How many guarded changes were counted within the window when it tripped.
    var changes: Int
    /// The rewrites in place the guard held (a `discard` restores them; deletions it finds in
    /// the queue).
    var rewrites: Set<FileID>
    /// The `seq` of the newest queued change when it tripped: a `discard` also undoes rewrites
    /// queued up to it that the guard had not looked at yet, never a later one (an edit made
    /// while held is kept).
    var lastSeq: UInt64 = 0

    /// `<seconds>;<changes>;<id>,<id>…;<lastSeq>`
    var text: String {
        "\(Int64(since.timeIntervalSince1970));\(changes);" + rewrites.map(\.hex).sorted().joined(separator: ",")
            + ";\(lastSeq)"
    }

    /// Any non-empty text reads as a hold (a damaged value must not let the held changes go);
    /// what cannot be read takes a neutral value.
    init(text: String) {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false)
        since = Date(timeIntervalSince1970: parts.first.flatMap { Double(String($0)) } ?? 0)
        changes = parts.count > 1 ? Int(String(parts[1])) ?? 0 : 0
        rewrites = parts.count > 2 ? Set(parts[2].split(separator: ",").compactMap { FileID(hex: String($0)) }) : []
        lastSeq = parts.count > 3 ? UInt64(String(parts[3])) ?? 0 : 0
    }

    init(since: Date, changes: Int, rewrites: Set<FileID>, lastSeq: UInt64 = 0) {
        self.since = since
        self.changes = changes
        self.rewrites = rewrites
        self.lastSeq = lastSeq
    }
}

extension StateFact where Value == GuardHold {
    /// The tripped mass-delete guard (`DeleteGuard`); absent when it is not tripped.
    static var guardHold: Self { .init(.guardHold, encode: \.text, decode: GuardHold.init(text:)) }
}

/// What the guard announces (the engine publishes it as a mount-level `events` line).
enum GuardEvent: Sendable {
    case held, released, discarded
}

/// What kind of guarded change the uploader is about to commit.
enum GuardedChange: Sendable {
    /// The delete of an entry the container has (also a file replaced by a rename over it).
    case deletion
    /// New content for a file the container has, written in place.
    case rewrite
}

/// The mass-delete guard of one mount (doc/SEMANTICS.md, "Mass-delete guard"): counts the
/// guarded changes the uploader is about to commit (`DeleteWindow`), trips when there are too
/// many, and then holds the whole upload queue until `release` or `discard`. The hold is
/// recorded in the state database (`guard_hold`) before anything else happens, and restored at
/// the next start. Nil thresholds (`--no-guard`): every change goes, nothing is counted.
final class DeleteGuard: Sendable {
    struct Snapshot: Sendable {
        var held: Bool
        var hold: GuardHold?
        /// Guarded changes counted within the window now.
        var counted: Int
        /// Guarded changes waiting for the stream to pause, or held.
        var waiting: Int
    }

    let thresholds: DeleteWindow.Thresholds?
    private struct State {
        var window: DeleteWindow
        var hold: GuardHold?
        /// Rewrites considered and not finished (held ones go into `hold.rewrites`).
        var rewrites: Set<FileID> = []
        /// When the queue was last looked through for deletions not seen yet (`lookAheadDue`).
        var lastLookAhead: Int64?
    }
    private let state: Mutex<State>
    private let clock: @Sendable () -> Int64
    /// Records the hold (nil: cleared) in the state database.
    private let record: @Sendable (GuardHold?) -> Void
    /// Publishes a mount-level event.
    private let publish: @Sendable (GuardEvent, String) -> Void

    init(
        thresholds: DeleteWindow.Thresholds?, restoring stored: GuardHold?, clock: @escaping @Sendable () -> Int64,
        record: @escaping @Sendable (GuardHold?) -> Void,
        publish: @escaping @Sendable (GuardEvent, String) -> Void
    ) {
        self.thresholds = thresholds
        // A hold recorded by an earlier run stays, even if this mount is started with
        // `--no-guard`: only `release` or `discard` ends it.
        state = Mutex(
            State(window: DeleteWindow(thresholds: thresholds ?? .standard, tripped: stored != nil), hold: stored))
        self.clock = clock
        self.record = record
        self.publish = publish
    }

    /// True while tripped: the uploader sends nothing.
    var isHeld: Bool { state.withLock { $0.window.tripped } }

    /// The uploader is about to commit the guarded change `id` (see `DeleteWindow.consider`);
    /// `treeSize` is the number of entries the container has for this mount. Trips the guard
    /// (recorded in the state database, then published) when this change is one too many.
    func consider(
        _ id: FileID, _ change: GuardedChange, treeSize: () -> Int, lastSeq: UInt64
    ) -> DeleteWindow.Verdict {
        guard thresholds != nil || isHeld else { return .go }
        let now = clock()
        let size = treeSize()
        let (verdict, toRecord, trippedNow) = state.withLock { state -> (DeleteWindow.Verdict, GuardHold?, Bool) in
            let wasTripped = state.window.tripped
            let verdict = state.window.consider(id, now: now, treeSize: size)
            if change == .rewrite && verdict != .go { state.rewrites.insert(id) }
            if !wasTripped && state.window.tripped {
                state.hold = GuardHold(
                    since: Date(), changes: state.window.count(now: now), rewrites: state.rewrites, lastSeq: lastSeq)
                return (verdict, state.hold, true)
            }
            // A rewrite first considered while held: recorded, so `discard` after a restart
            // restores it too.
            if change == .rewrite && wasTripped && state.hold?.rewrites.contains(id) == false {
                state.hold!.rewrites.insert(id)
                return (verdict, state.hold, false)
            }
            return (verdict, nil, false)
        }
        if let toRecord { record(toRecord) }
        if trippedNow, let hold = toRecord {
            let window = Self.seconds(thresholds?.window ?? DeleteWindow.Thresholds.standard.window)
            publish(
                .held,
                "\(hold.changes) deletions or replacements within \(window); "
                    + "uploads are held until `syncfs-mount release` or `discard`")
        }
        return verdict
    }

    /// The uploader commits `id` now (`DeleteWindow.admit`).
    func admit(_ id: FileID) { state.withLock { $0.window.admit(id) } }

    /// True if `id` was considered or released (a look-ahead skips it).
    func isKnown(_ id: FileID) -> Bool { state.withLock { $0.window.isKnown(id) } }

    /// True, at most twice per settle period, when the uploader should look through the queue
    /// for deletions not seen yet before a guarded change goes; never for a released change.
    func lookAheadDue(for id: FileID) -> Bool {
        let now = clock()
        return state.withLock { state in
            guard state.window.isWaiting(id) else { return false }
            if let last = state.lastLookAhead, now - last < state.window.thresholds.settle / 2 { return false }
            state.lastLookAhead = now
            return true
        }
    }

    /// True if a guarded change other than `id` waits for the stream to pause (or is held; not
    /// one already let go, which may be what waits for `id` in turn);
    /// forgets those no longer queued (`isQueued` false: taken over by a remote change, say).
    func othersWaiting(than id: FileID, isQueued: (FileID) -> Bool) -> Bool {
        state.withLock { state in
            for other in state.window.pending.keys where other != id {
                if isQueued(other) { return true }
                state.window.finished(other)
                state.rewrites.remove(other)
            }
            return false
        }
    }

    /// True if `id` is a guarded change waiting for the stream to pause, or held.
    func isWaiting(_ id: FileID) -> Bool { state.withLock { $0.window.isWaiting(id) } }

    /// `id` was committed, or its change dropped.
    func finished(_ id: FileID) {
        state.withLock {
            $0.window.finished(id)
            $0.rewrites.remove(id)
        }
    }

    /// `release`: every change queued now (`queued`) goes, counted no more. Returns whether the
    /// guard was held.
    func release(queued: [FileID]) -> Bool {
        let wasHeld = state.withLock { state in
            let held = state.window.tripped
            if held {
                state.window.release(alsoReleased: queued)
                state.hold = nil
                state.rewrites = []
            }
            return held
        }
        guard wasHeld else { return false }
        record(nil)
        publish(.released, "the held changes go to the container")
        return true
    }

    /// The hold (for `discard`), or nil if not held.
    var currentHold: GuardHold? {
        state.withLock { $0.window.tripped ? ($0.hold ?? GuardHold(since: Date(), changes: 0, rewrites: [])) : nil }
    }

    /// `discard` undid the held changes (`restored` of them; `kept` could not be): the guard
    /// watches afresh.
    func discarded(restored: Int, kept: Int) {
        state.withLock { state in
            state.window.discard()
            state.hold = nil
            state.rewrites = []
        }
        record(nil)
        var message = "\(restored) held deletions or replacements undone from the container"
        if kept > 0 { message += "; \(kept) could not be undone and stay queued" }
        publish(.discarded, message)
    }

    var snapshot: Snapshot {
        let now = clock()
        return state.withLock {
            Snapshot(
                held: $0.window.tripped, hold: $0.hold, counted: $0.window.count(now: now),
                waiting: $0.window.pending.count)
        }
    }

    static func seconds(_ nanoseconds: Int64) -> String {
        let seconds = Double(nanoseconds) / 1e9
        return seconds == seconds.rounded() ? "\(Int64(seconds)) s" : "\(seconds) s"
    }
}
