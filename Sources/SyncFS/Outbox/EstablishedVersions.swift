import SyncBackend

/// Which container versions are *established* for the mass-delete guard: content that has been in
/// the container for a while, as opposed to what this mount (or another machine) has just made —
/// a `git clone`, a build's object files, an unpacked archive (doc/SEMANTICS.md, "Mass-delete
/// guard"). Only changes to established entries are counted.
///
/// Contract (versions are container-wide commit numbers, so a larger one is a later commit):
/// - A version is established if this run of the daemon never saw it arrive: it is below the
///   lowest version that arrived after the run's first catch-up with the feed or that this run
///   committed itself (`lowestFresh`). Everything the container had when the mount started is
///   established at once.
/// - A version this run saw arrive is established once it has been known for `age`: it is at
///   most the highest version known `age` ago (`settledMark`). Arrivals are grouped into buckets
///   of `age / 60`, so an arrival may count as up to one bucket older than it is.
/// Time is passed in (nanoseconds), so tests drive it with a manual clock.
struct EstablishedVersions: Sendable {
    /// How long a version this run saw arrive stays fresh (ns); 0: every version is established.
    let age: Int64
    /// The lowest version that arrived after the first catch-up or was committed by this run;
    /// nil while none has.
    private(set) var lowestFresh: EntryVersion?
    /// The highest version known at least `age` ago.
    private(set) var settledMark: EntryVersion = 0
    /// Arrivals not settled yet: the highest version known at each bucket's start, oldest first.
    private var recent: [(time: Int64, version: EntryVersion)] = []
    private var caughtUp = false

    init(age: Int64) { self.age = max(0, age) }

    /// The follower read the whole feed for the first time (later calls change nothing): what
    /// arrives from now on is fresh.
    mutating func feedCaughtUp() { caughtUp = true }

    /// The feed brought `version` (at `now`).
    mutating func arrived(_ version: EntryVersion, now: Int64) {
        if caughtUp { noteFresh(version) }
        note(version, now: now)
    }

    /// This mount committed `version` (at `now`).
    mutating func committed(_ version: EntryVersion, now: Int64) {
        noteFresh(version)
        note(version, now: now)
    }

    /// True if `version` (a version the container has, > 0) is established at `now`.
    func isEstablished(_ version: EntryVersion, now: Int64) -> Bool {
        if age == 0 { return true }
        guard let lowestFresh, version >= lowestFresh else { return true }
        let settledBefore = now - age
        let known = recent.last { $0.time <= settledBefore }?.version ?? 0
        return version <= max(settledMark, known)
    }

    private mutating func noteFresh(_ version: EntryVersion) {
        if lowestFresh.map({ version < $0 }) ?? true { lowestFresh = version }
    }

    private mutating func note(_ version: EntryVersion, now: Int64) {
        settle(now: now)
        let bucket = max(1, age / 60)
        if let last = recent.last, now - last.time < bucket {
            recent[recent.count - 1].version = max(last.version, version)
        } else {
            recent.append((now, max(version, recent.last?.version ?? 0)))
        }
    }

    private mutating func settle(now: Int64) {
        let settledBefore = now - age
        let firstRecent = recent.firstIndex { $0.time > settledBefore } ?? recent.count
        guard firstRecent > 0 else { return }
        settledMark = max(settledMark, recent[firstRecent - 1].version)
        recent.removeFirst(firstRecent)
    }
}
