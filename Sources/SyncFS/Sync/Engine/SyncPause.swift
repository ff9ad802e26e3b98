import Foundation
import SyncBackend

/// A paused mount (doc/SEMANTICS.md, "Pausing a mount"): what is paused and until when.
struct PauseState: Sendable, Equatable {
    enum Scope: String, Sendable {
        /// Uploads and the change feed stop; reads of placeholders still download.
        case sync
        /// Every transfer stops: also downloads (a read of a placeholder fails as offline).
        case all
    }

    /// When it ends by itself; nil: only `resume` ends it.
    var until: Date?
    var scope: Scope

    /// `<until>;<scope>`: `until` in seconds since the Unix epoch as Swift prints a `Double`, or
    /// `never`; `scope` `sync` or `all`.
    var text: String { "\(until.map { "\($0.timeIntervalSince1970)" } ?? "never");\(scope.rawValue)" }

    init(until: Date?, scope: Scope) {
        self.until = until
        self.scope = scope
    }

    /// A stored text; one that cannot be read — also an end that is not a finite number
    /// (`nan`, `inf`) — is a pause without end of uploads and the feed (the safe side: nothing
    /// the user held back leaves, and `resume` ends it).
    init(text: String) {
        let parts = text.split(separator: ";", omittingEmptySubsequences: false)
        let scope = parts.count == 2 ? Scope(rawValue: String(parts[1])) : nil
        let until = parts.first.flatMap { Double(String($0)) }.flatMap {
            $0.isFinite ? Date(timeIntervalSince1970: $0) : nil
        }
        guard let scope, until != nil || parts.first == "never" else {
            self.init(until: nil, scope: .sync)
            return
        }
        self.init(until: until, scope: scope)
    }
}

extension StateFact where Value == PauseState {
    /// The mount is paused (`SyncPause`); absent when it is not.
    static var paused: Self { .init(.paused, encode: \.text, decode: { PauseState(text: $0) }) }
}

/// The pause of one mount's engine: `pause` and `resume` (the control socket) set it, the
/// engine's threads wait on it — the uploader and the follower while paused, the downloader
/// while all transfers are — and a pause with an end ends by itself when a waiting thread (or
/// `status`, through `endIfDue`) finds its time passed; `current` never shows it after that.
///
/// No polling: a waiting thread sleeps on a condition until `resume`, the pause's end, or
/// `stop`. Every change is recorded (`record`, the `paused` fact), announced once
/// (`announce`: `paused` / `resumed` events), and handed to `observe`rs (the engine wakes and
/// rewires its parts), one change at a time and in order, outside the lock waiting threads use.
/// Lock order: the change lock, then whatever observers take, then the condition's lock (held
/// only briefly, never across a call out).
final class SyncPause: @unchecked Sendable {
    /// What a change of the pause is announced as.
    enum Change: Sendable, Equatable {
        case paused(PauseState)
        /// `expired`: it ended by itself (its time passed), not by `resume`.
        case resumed(expired: Bool)
    }

    // State behind `condition` (an NSCondition is also its lock).
    private let condition = NSCondition()
    /// Held across a change and its consequences, so they are recorded and announced in order
    /// (an observer must not change the pause).
    private let changing = NSLock()
    private var state: PauseState?
    private var stopped = false
    /// How many threads sleep in `waitWhilePaused` now.
    private var sleeping = 0
    private var observers: [@Sendable (PauseState?) -> Void] = []
    private let record: @Sendable (PauseState?) -> Void
    private let announce: @Sendable (Change) -> Void

    /// `restoring`: the recorded pause; one whose end passed meanwhile (the mount was down) ends
    /// at once, recorded and announced as expired.
    init(
        restoring: PauseState?, record: @escaping @Sendable (PauseState?) -> Void,
        announce: @escaping @Sendable (Change) -> Void
    ) {
        self.record = record
        self.announce = announce
        state = restoring
        if let until = restoring?.until, until <= Date() {
            state = nil
            record(nil)
            announce(.resumed(expired: true))
        }
    }

    /// The pause now (nil: not paused, or its end has passed). Only reads: cheap, and safe to
    /// call under other locks (the rounds' up-to-date condition calls it).
    var current: PauseState? {
        condition.lock()
        defer { condition.unlock() }
        guard let state, !Self.hasEnded(state) else { return nil }
        return state
    }

    /// Ends a pause whose end has passed (recorded, announced, observed); nothing otherwise.
    /// Called where the pause is waited on and where it is reported (`status`); never under a
    /// lock an observer takes.
    func endIfDue() {
        changing.lock()
        defer { changing.unlock() }
        condition.lock()
        let ended = expireIfDue()
        condition.unlock()
        if ended { changed(.resumed(expired: true), to: nil) }
    }

    /// Whether the engine's `scope` is paused now (`.sync`: uploads and the feed, which `all`
    /// pauses too).
    func holds(_ scope: PauseState.Scope) -> Bool { current.map { Self.covers($0, scope) } ?? false }

    /// Pauses (or changes the pause to) `new`; recorded, announced and observed.
    func pause(_ new: PauseState) {
        changing.lock()
        defer { changing.unlock() }
        condition.lock()
        state = new
        condition.unlock()
        changed(.paused(new), to: new)
    }

    /// Ends the pause; false (nothing announced) if the mount was not paused.
    @discardableResult
    func resume() -> Bool {
        changing.lock()
        defer { changing.unlock() }
        condition.lock()
        let was = state != nil
        state = nil
        condition.unlock()
        if was { changed(.resumed(expired: false), to: nil) }
        return was
    }

    /// Blocks the calling engine thread while `scope` is paused: returns at `resume`, at the
    /// pause's end (which it ends, announcing `resumed`), or at `stop`. Returns whether the
    /// caller must not go on with a transfer now: true if it waited or the engine stopped
    /// (false: not paused and running, go on).
    @discardableResult
    func waitWhilePaused(_ scope: PauseState.Scope) -> Bool {
        var waited = false
        condition.lock()
        defer { condition.unlock() }
        if stopped { return true }
        while !stopped, let paused = state, Self.covers(paused, scope) {
            waited = true
            if Self.hasEnded(paused) {
                // Ended in order with other changes (`endIfDue` takes the change lock first).
                condition.unlock()
                endIfDue()
                condition.lock()
                continue
            }
            let deadline = paused.until ?? .distantFuture
            sleeping += 1
            _ = condition.wait(until: ConditionDeadline.bounded(deadline))
            sleeping -= 1
        }
        return waited || stopped
    }

    /// How many threads sleep in `waitWhilePaused` now (a test waits for a waiter to be asleep).
    var sleepingThreads: Int {
        condition.lock()
        defer { condition.unlock() }
        return sleeping
    }

    /// Calls `observer` after every change of the pause, with the new state (nil: resumed).
    func observe(_ observer: @escaping @Sendable (PauseState?) -> Void) {
        condition.lock()
        observers.append(observer)
        condition.unlock()
    }

    /// The engine stops: every wait ends now and later ones return at once.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Under the lock: ends a pause whose time passed; true if it did (`changed` wakes the
    /// waiters).
    private func expireIfDue() -> Bool {
        guard let state, Self.hasEnded(state) else { return false }
        self.state = nil
        return true
    }

    private static func hasEnded(_ paused: PauseState) -> Bool { paused.until.map { $0 <= Date() } ?? false }

    /// Records, announces and observes a change, then wakes the waiting threads: only once the
    /// observers rewired the engine (a resumed downloader finds its source restored).
    private func changed(_ change: Change, to new: PauseState?) {
        record(new)
        announce(change)
        condition.lock()
        let observers = self.observers
        condition.unlock()
        for observer in observers { observer(new) }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    private static func covers(_ paused: PauseState, _ scope: PauseState.Scope) -> Bool {
        scope == .sync || paused.scope == .all
    }
}
