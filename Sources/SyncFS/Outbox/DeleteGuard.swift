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
    /// Guarded changes of the burst that reached the container before it tripped (the first
    /// ones of a window go at once): a `discard` restores them from the container's history.
    var sent: [SentChange] = []

    /// `<seconds>;<changes>;<id>,<id>…;<lastSeq>;<sent>,<sent>…` (`SentChange.text`)
    var text: String {
        "\(Int64(since.timeIntervalSince1970));\(changes);" + rewrites.map(\.hex).sorted().joined(separator: ",")
            + ";\(lastSeq);" + sent.map(\.text).joined(separator: ",")
    }

    /// Any non-empty text reads as a hold (a damaged value must not let the held changes go);
    /// what cannot be read takes a neutral value.
    init(text: String) {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false)
        since = Date(timeIntervalSince1970: parts.first.flatMap { Double(String($0)) } ?? 0)
        changes = parts.count > 1 ? Int(String(parts[1])) ?? 0 : 0
        rewrites = parts.count > 2 ? Set(parts[2].split(separator: ",").compactMap { FileID(hex: String($0)) }) : []
        lastSeq = parts.count > 3 ? UInt64(String(parts[3])) ?? 0 : 0
        sent = parts.count > 4 ? parts[4].split(separator: ",").compactMap { SentChange(text: String($0)) } : []
    }

    init(since: Date, changes: Int, rewrites: Set<FileID>, lastSeq: UInt64 = 0, sent: [SentChange] = []) {
        self.since = since
        self.changes = changes
        self.rewrites = rewrites
        self.lastSeq = lastSeq
        self.sent = sent
    }
}

/// A guarded change the guard let go to the container, and what brings its content back.
struct SentChange: Sendable, Equatable {
    var id: FileID
    /// The version it replaced: the one a `restore` brings back (for a deletion, the tombstone's
    /// last state is the same content).
    var replaced: EntryVersion
    var isRewrite: Bool

    /// `<id>:<d|r><replaced>`
    var text: String { "\(id.hex):\(isRewrite ? "r" : "d")\(replaced)" }

    init(id: FileID, replaced: EntryVersion, isRewrite: Bool) {
        (self.id, self.replaced, self.isRewrite) = (id, replaced, isRewrite)
    }

    init?(text: String) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let id = FileID(hex: String(parts[0])), let kind = parts[1].first,
            kind == "d" || kind == "r", let replaced = EntryVersion(String(parts[1].dropFirst()))
        else { return nil }
        self.init(id: id, replaced: replaced, isRewrite: kind == "r")
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

/// A guarded change the uploader is about to commit (`GuardedUploads` decides what is
/// guarded).
struct GuardedChange: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// The delete of an established entry.
        case deletion
        /// High-entropy new content for an established file: written in place, or by a rename
        /// over it.
        case rewrite
    }

    var kind: Kind
    /// The container's version it removes or replaces.
    var replaced: EntryVersion
}

/// The mass-delete guard of one mount (doc/SEMANTICS.md, "Mass-delete guard"): counts the
/// guarded changes the uploader is about to commit (`DeleteWindow`), trips when there are too
/// many, and then holds the whole upload queue until `release` or `discard`. The hold is
/// recorded in the state database (`guard_hold`) before anything else happens, and restored at
/// the next start. It also tells which versions are established (`EstablishedVersions`): only
/// changes to those are guarded. Nil thresholds (`--no-guard`): every change goes, nothing is
/// counted.
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
        var established: EstablishedVersions
        /// Rewrites considered and not finished (held ones go into `hold.rewrites`).
        var rewrites: Set<FileID> = []
        /// What each change considered and not finished is.
        var considered: [FileID: GuardedChange] = [:]
        /// Guarded changes let go within the window, oldest first (`GuardHold.sent` when it trips).
        var sent: [(time: Int64, change: SentChange)] = []
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
        let standard = thresholds ?? .standard
        state = Mutex(
            State(
                window: DeleteWindow(thresholds: standard, tripped: stored != nil), hold: stored,
                established: EstablishedVersions(age: standard.establishedAge)))
        self.clock = clock
        self.record = record
        self.publish = publish
    }

    /// True while tripped: the uploader sends nothing.
    var isHeld: Bool { state.withLock { $0.window.tripped } }

    /// True if changes are counted at all (not `--no-guard`, or a recorded hold).
    var isWatching: Bool { thresholds != nil || isHeld }

    // MARK: Established versions

    /// The follower read the whole feed (`EstablishedVersions.feedCaughtUp`).
    func feedCaughtUp() { state.withLock { $0.established.feedCaughtUp() } }

    /// The feed brought `version`.
    func arrived(_ version: EntryVersion) {
        let now = clock()
        state.withLock { $0.established.arrived(version, now: now) }
    }

    /// This mount committed `version`.
    func committed(_ version: EntryVersion) {
        let now = clock()
        state.withLock { $0.established.committed(version, now: now) }
    }

    /// True if a change to the container's `version` of an entry is guarded by age: the version
    /// has been in the container for a while (`EstablishedVersions`).
    func isEstablished(_ version: EntryVersion) -> Bool {
        let now = clock()
        return state.withLock { $0.established.isEstablished(version, now: now) }
    }

    // MARK: Counting

    /// The uploader is about to commit the guarded change `id` (see `DeleteWindow.consider`);
    /// `treeSize` is the number of entries the container has for this mount. Trips the guard
    /// (recorded in the state database, then published) when this change is one too many.
    func consider(
        _ id: FileID, _ change: GuardedChange, treeSize: () -> Int, lastSeq: UInt64
    ) -> DeleteWindow.Verdict {
        guard isWatching else { return .go }
        let now = clock()
        let size = treeSize()
        let isRewrite = change.kind == .rewrite
        let (verdict, toRecord, trippedNow) = state.withLock { state -> (DeleteWindow.Verdict, GuardHold?, Bool) in
            let wasTripped = state.window.tripped
            state.considered[id] = change
            let verdict = state.window.consider(id, isRewrite: isRewrite, now: now, treeSize: size)
            if isRewrite && verdict != .go { state.rewrites.insert(id) }
            if !wasTripped && state.window.tripped {
                let windowStart = now - state.window.thresholds.window
                state.sent.removeAll { $0.time <= windowStart }
                state.hold = GuardHold(
                    since: Date(), changes: state.window.count(now: now), rewrites: state.rewrites, lastSeq: lastSeq,
                    sent: state.sent.map(\.change))
                state.sent = []
                return (verdict, state.hold, true)
            }
            // A rewrite first considered while held: recorded, so `discard` after a restart
            // restores it too.
            if isRewrite && wasTripped && state.hold?.rewrites.contains(id) == false {
                state.hold!.rewrites.insert(id)
                return (verdict, state.hold, false)
            }
            return (verdict, nil, false)
        }
        if let toRecord { record(toRecord) }
        if trippedNow, let hold = toRecord {
            let window = Self.seconds(thresholds?.window ?? DeleteWindow.Thresholds.standard.window)
            var message = "\(hold.changes) deletions or replacements within \(window); "
            if !hold.sent.isEmpty {
                message += "\(hold.sent.count) of them reached the container before it tripped; "
            }
            publish(.held, message + "uploads are held until `syncfs-mount release` or `discard`")
        }
        return verdict
    }

    /// The uploader commits `id` now (`DeleteWindow.admit`); a guarded change is remembered
    /// within the window, so a `discard` of a burst that trips later restores it too.
    func admit(_ id: FileID) {
        let now = clock()
        state.withLock { state in
            state.window.admit(id)
            guard let change = state.considered.removeValue(forKey: id) else { return }
            let windowStart = now - state.window.thresholds.window
            state.sent.removeAll { $0.time <= windowStart }
            state.sent.append(
                (now, SentChange(id: id, replaced: change.replaced, isRewrite: change.kind == .rewrite)))
        }
    }

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
                state.considered[other] = nil
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
            $0.considered[id] = nil
        }
    }

    // MARK: Release and discard

    /// `release`: every change queued now (`queued`) goes, counted no more. Returns whether the
    /// guard was held.
    func release(queued: [FileID]) -> Bool {
        let wasHeld = state.withLock { state in
            let held = state.window.tripped
            if held {
                state.window.release(alsoReleased: queued)
                state.hold = nil
                state.rewrites = []
                state.considered = [:]
                state.sent = []
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

    /// `discard` restored the burst's changes already sent (`sent` of the hold): recorded, so a
    /// `discard` that must be run again does not restore them twice.
    func sentRestored() {
        let hold = state.withLock { state -> GuardHold? in
            guard state.hold != nil else { return nil }
            state.hold!.sent = []
            return state.hold
        }
        if let hold { record(hold) }
    }

    /// `discard` undid the held changes (`restored` of them; `kept` could not be): the guard
    /// watches afresh.
    func discarded(restored: Int, kept: Int) {
        state.withLock { state in
            state.window.discard()
            state.hold = nil
            state.rewrites = []
            state.considered = [:]
            state.sent = []
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
