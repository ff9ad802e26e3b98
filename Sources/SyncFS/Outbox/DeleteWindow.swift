import SyncBackend

/// The mass-delete guard's counting, as a pure value (doc/SEMANTICS.md, "Mass-delete guard").
///
/// A *guarded change* is a queued change that would remove or replace established content (the
/// uploader decides what is guarded: `GuardedUploads`): the delete of an established
/// entry, or high-entropy new content for an established file. The uploader asks `consider`
/// before it commits one; the answer is `go`, `wait` (ask again at that time) or `held` (the
/// guard tripped: nothing goes until `release`/`discard`).
///
/// Contract:
/// - Every guarded change is counted once, when the uploader first considers it (its
///   *sighting*), in a sliding window of `Thresholds.window`.
/// - The guard trips when the **entries** whose changes were sighted within the window reach
///   a threshold (`Thresholds.exceeded`): one file rewritten many times (a log, an autosave)
///   counts once. Then every answer is `held` until `release` or `discard`.
/// - While no more than `Thresholds.prompt` guarded changes were sighted within the last
///   `Thresholds.settle`, a guarded change goes at once: a single edit or delete, or a few at a
///   person's pace, never wait.
/// - In a burst (more than that), a guarded change goes only once the stream of guarded changes
///   has paused for `settle` (none sighted since), or once it has waited a whole window: a
///   `rm -rf` is held until it ends, so no more than `prompt` of it reach the container before
///   the guard trips; whatever the pace, fewer than the threshold reach it within any window.
/// Time is passed in (nanoseconds), so tests drive it with a manual clock.
struct DeleteWindow: Sendable {
    /// When the guard trips (mount options `--guard-deletes`, `--guard-rewrites`,
    /// `--guard-fraction`, `--guard-minimum`, `--guard-window`, `--no-guard`).
    struct Thresholds: Sendable, Equatable {
        /// This many guarded changes (deletions and rewrites) within the window trip the guard.
        var changes: Int
        /// This many high-entropy rewrites in place within the window trip it too.
        var rewrites: Int
        /// This fraction (0...1) of the committed entries within the window trips it too, but only
        /// with at least `minimumForFraction` changes (a small tree is not guarded by the
        /// fraction: deleting 2 of 3 files is not a mass deletion).
        var fraction: Double
        var minimumForFraction: Int
        /// The sliding window (ns).
        var window: Int64
        /// How long the stream of guarded changes must pause before one of them goes, once more
        /// than `prompt` were sighted within such a period (ns).
        var settle: Int64
        /// Guarded changes within one `settle` that still go at once (a person's pace).
        var prompt: Int
        /// How long a version this mount saw arrive counts as fresh, not established (ns;
        /// `EstablishedVersions`).
        var establishedAge: Int64

        /// 1,000 changes, 100 high-entropy rewrites, or 30 % of the tree and at least 50 changes,
        /// within 60 s; up to 20 a second go at once, a faster burst after a 1 s pause of the
        /// stream; a version is established after an hour.
        static let standard = Thresholds(
            changes: 1000, rewrites: 100, fraction: 0.3, minimumForFraction: 50,
            window: Duration.seconds(60).inNanoseconds, settle: Duration.seconds(1).inNanoseconds, prompt: 20,
            establishedAge: Duration.seconds(3600).inNanoseconds)

        /// True if `count` guarded changes within one window, `rewrites` of them rewrites, in a
        /// tree of `treeSize` committed entries, trip the guard.
        func exceeded(count: Int, rewrites rewriteCount: Int, treeSize: Int) -> Bool {
            if count >= changes || rewriteCount >= rewrites { return true }
            return count >= minimumForFraction && Double(count) >= fraction * Double(max(treeSize, 0))
        }
    }

    enum Verdict: Equatable, Sendable {
        /// Commit it now.
        case go
        /// Not yet: ask again at this time (ns).
        case wait(until: Int64)
        /// The guard has tripped: nothing goes until released or discarded.
        case held
    }

    let thresholds: Thresholds
    /// Guarded changes considered but not committed yet, each with its sighting time.
    private(set) var pending: [FileID: Int64] = [:]
    /// Sightings within the window (committed or not), oldest first.
    private var sightings: [(time: Int64, id: FileID, isRewrite: Bool)] = []
    /// How many of `sightings` each entry has: the guard counts entries, not changes (a file
    /// saved every second is one file, however many times it is rewritten within the window).
    private var sightingsPerEntry: [FileID: Int] = [:]
    /// How many of `sightings` are rewrites, per entry.
    private var rewritesPerEntry: [FileID: Int] = [:]
    private var lastSighting: Int64 = .min
    /// Set when the guard trips; cleared by `release`/`discard`.
    private(set) var tripped = false
    /// Changes a `release` let go: they are not counted again and always go.
    private var released: Set<FileID> = []
    /// Changes the guard let go (`admit`) that are not committed yet (a conflict being resolved):
    /// they go on going, and no longer wait.
    private var admitted: Set<FileID> = []

    init(thresholds: Thresholds, tripped: Bool = false) {
        self.thresholds = thresholds
        self.tripped = tripped
    }

    /// Guarded changes sighted within the window ending at `now`.
    mutating func count(now: Int64) -> Int {
        prune(now: now)
        return sightingsPerEntry.count
    }

    /// The uploader is about to commit the guarded change `id` (a high-entropy rewrite if
    /// `isRewrite`, else a deletion); `treeSize` is the number of entries the container has for
    /// this mount (for the fraction). Sights it the first time. Check `tripped` after a `held`
    /// answer to see whether this call tripped the guard.
    mutating func consider(_ id: FileID, isRewrite: Bool = false, now: Int64, treeSize: Int) -> Verdict {
        if released.contains(id) || admitted.contains(id) { return .go }
        if tripped {
            if pending[id] == nil { pending[id] = now }
            return .held
        }
        if pending[id] == nil {
            pending[id] = now
            sightings.append((now, id, isRewrite))
            sightingsPerEntry[id, default: 0] += 1
            if isRewrite { rewritesPerEntry[id, default: 0] += 1 }
            lastSighting = max(lastSighting, now)
        }
        prune(now: now)
        if thresholds.exceeded(count: sightingsPerEntry.count, rewrites: rewritesPerEntry.count, treeSize: treeSize) {
            tripped = true
            return .held
        }
        if recentSightings(now: now) <= thresholds.prompt { return .go }
        let sighted = pending[id]!
        if now - sighted >= thresholds.window { return .go }
        let quietFrom = max(sighted, lastSighting) + thresholds.settle
        if now >= quietFrom { return .go }
        return .wait(until: min(quietFrom, sighted + thresholds.window))
    }

    /// True if `id` was considered and is waiting (or held).
    func isWaiting(_ id: FileID) -> Bool { pending[id] != nil }

    /// True if `id` was considered (waiting or held), admitted or released: a look-ahead skips it.
    func isKnown(_ id: FileID) -> Bool { pending[id] != nil || released.contains(id) || admitted.contains(id) }

    /// The uploader commits `id` after a `go`: it no longer waits (`isWaiting` is false), and
    /// goes whatever comes later, until `finished`.
    mutating func admit(_ id: FileID) {
        guard pending.removeValue(forKey: id) != nil else { return }
        admitted.insert(id)
    }

    /// `id` was committed, or its change dropped: it no longer waits (its sighting still counts
    /// in the window).
    mutating func finished(_ id: FileID) {
        pending[id] = nil
        released.remove(id)
        admitted.remove(id)
    }

    /// `release`: the held changes, and `alsoReleased` (held changes not considered yet, e.g.
    /// after a restart), go; the window starts afresh (they are not counted again).
    mutating func release(alsoReleased: some Sequence<FileID> = []) {
        released.formUnion(pending.keys)
        released.formUnion(alsoReleased)
        released.formUnion(admitted)
        admitted = []
        tripped = false
        sightings = []
        sightingsPerEntry = [:]
        rewritesPerEntry = [:]
        lastSighting = .min
        pending = [:]
    }

    /// `discard`: the held changes were undone locally; the window starts afresh.
    mutating func discard() {
        admitted = []
        tripped = false
        sightings = []
        sightingsPerEntry = [:]
        rewritesPerEntry = [:]
        lastSighting = .min
        pending = [:]
    }

    /// Sightings within the last `settle` (up to one more than `prompt`: all it needs to know).
    private func recentSightings(now: Int64) -> Int {
        var count = 0
        for sighting in sightings.reversed() {
            guard sighting.time > now - thresholds.settle, count <= thresholds.prompt else { break }
            count += 1
        }
        return count
    }

    private mutating func prune(now: Int64) {
        let start = now - thresholds.window
        let firstKept = sightings.firstIndex { $0.time > start } ?? sightings.count
        guard firstKept > 0 else { return }
        for (_, id, isRewrite) in sightings[..<firstKept] {
            let left = (sightingsPerEntry[id] ?? 1) - 1
            sightingsPerEntry[id] = left > 0 ? left : nil
            if isRewrite {
                let rewritesLeft = (rewritesPerEntry[id] ?? 1) - 1
                rewritesPerEntry[id] = rewritesLeft > 0 ? rewritesLeft : nil
            }
        }
        sightings.removeFirst(firstKept)
    }
}

/// The mass-delete guard's thresholds as the mount's options give them (doc/CLI.md, `mount`).
public struct GuardThresholds: Sendable, Equatable {
    /// `--guard-deletes N`: N deletions or replacements of established entries within the window
    /// trip it.
    public var deletes = DeleteWindow.Thresholds.standard.changes
    /// `--guard-rewrites N`: N high-entropy rewrites of established files within the window.
    public var rewrites = DeleteWindow.Thresholds.standard.rewrites
    /// `--guard-fraction P` (percent): P % of the tree, if also at least `minimum`.
    public var percent = DeleteWindow.Thresholds.standard.fraction * 100
    /// `--guard-minimum M`: the fewest changes the fraction trips on.
    public var minimum = DeleteWindow.Thresholds.standard.minimumForFraction
    /// `--guard-window S`: the sliding window, in seconds.
    public var windowSeconds = Double(DeleteWindow.Thresholds.standard.window) / 1e9
    /// `--guard-age S`: how long a version this mount saw arrive stays fresh, in seconds.
    public var ageSeconds = Double(DeleteWindow.Thresholds.standard.establishedAge) / 1e9

    public init() {}

    /// Why these values cannot be used, if they cannot (for the command line's validation).
    public var problem: String? {
        if deletes < 1 || deletes > 100_000_000 { return "--guard-deletes must be between 1 and 100000000" }
        if rewrites < 1 || rewrites > 100_000_000 { return "--guard-rewrites must be between 1 and 100000000" }
        if !(percent > 0 && percent <= 100) { return "--guard-fraction must be a percentage above 0, at most 100" }
        if minimum < 1 || minimum > 100_000_000 { return "--guard-minimum must be between 1 and 100000000" }
        if !(windowSeconds >= 1 && windowSeconds <= 86_400) {
            return "--guard-window must be between 1 and 86400 seconds"
        }
        if !(ageSeconds >= 0 && ageSeconds <= 31_536_000) {
            return "--guard-age must be between 0 and 31536000 seconds"
        }
        return nil
    }

    var window: DeleteWindow.Thresholds {
        var thresholds = DeleteWindow.Thresholds.standard
        thresholds.changes = deletes
        thresholds.rewrites = rewrites
        thresholds.fraction = percent / 100
        thresholds.minimumForFraction = minimum
        thresholds.window = Int64(windowSeconds * 1e9)
        thresholds.establishedAge = Int64(ageSeconds * 1e9)
        // The pause that lets a change go is never longer than the window.
        thresholds.settle = min(thresholds.settle, thresholds.window)
        return thresholds
    }
}
