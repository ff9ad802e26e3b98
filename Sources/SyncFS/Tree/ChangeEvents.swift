import Foundation
import Glibc
import SyncBackend
import Synchronization

/// One change to the folder, as `syncfs-mount events` prints it (one JSON object per line).
///
/// `path` is relative to the mount point, without a leading slash ("" is the root), taken when
/// the change happened; names that are not UTF-8 show U+FFFD for their invalid bytes.
///
/// Besides changes, a few kinds report what happened to the mount or to a file's content
/// (doc/CLI.md, "events"): `online`/`offline` (path "", once per transition, delivered to every
/// subscriber whatever its filter), `downloaded` (a file's content is now all here) and
/// `rules-error` (a rules file has an error; `message` says which, once per distinct error).
struct ChangeEvent: Codable, Sendable, Equatable {
    enum Kind: String, Codable, Sendable {
        case created, modified, deleted, renamed, merged, conflict
        /// The container answers again (after `offline`). Path "".
        case online
        /// The container stopped answering (`message`: the failure). Path "".
        case offline
        /// A file's content finished downloading (opened, `download`, a pin).
        case downloaded
        /// A rules file (`path`) has an error (`message`); once per distinct error.
        case rulesError = "rules-error"
        /// The mass-delete guard tripped, was released, or its held changes discarded
        /// (`DeleteGuard`; `message`: what). Path "".
        case guardHeld = "guard-held"
        case guardReleased = "guard-released"
        case guardDiscarded = "guard-discarded"
        /// The tree was checked against the container and differed (`TreeCheckReport`; `message`:
        /// what was corrected). Path "".
        case treeCorrected = "tree-corrected"
        /// A lock a process here held was lost (`message`: which and why; doc/SEMANTICS.md, "Locks").
        case lockLost = "lock-lost"
        /// Not a change: the subscriber fell too far behind and the events after this were dropped.
        case overflow
        /// The follower began / finished reading the container's feed to its end: a first attach
        /// or a catch-up (`message`: `attach` or `catch-up`; `scan-end`'s `counts`: what it read).
        /// Path "".
        case scanBegin = "scan-begin"
        case scanEnd = "scan-end"
        /// The mount became up to date (`SyncRounds`; `counts`: sent and received since the last
        /// one). Path "".
        case synced
        /// The mount was paused (`message`: until when, and whether downloads are paused too) /
        /// resumed (`message`: by `resume`, or the pause's end). Path "".
        case paused, resumed
        /// The role the container grants this mount changed (`AccessKeeper`; `message`: read-only
        /// or writable, and why). Path "".
        case access
        /// An encrypted container showed what no member made (a `SealedAlarm`; `message`: what):
        /// nothing more is applied or uploaded. Path "".
        case alarm
    }

    enum Origin: String, Codable, Sendable {
        /// A program on this machine changed the folder.
        case local
        /// The change came from the container (another mount) and was applied here.
        case remote
    }

    enum EntryType: String, Codable, Sendable {
        case file, directory, symlink

        init(_ kind: NodeKind) {
            switch kind {
            case .file: self = .file
            case .directory: self = .directory
            case .symlink: self = .symlink
            }
        }
    }

    /// ISO 8601, UTC, milliseconds: `2026-11-21T15:45:02.123Z`.
    var time: String
    var path: String
    /// Renames only: where the entry was.
    var oldPath: String?
    var kind: Kind
    var origin: Origin?
    /// The entry's stable file ID (32 hex digits); the same across renames and on every mount.
    var fileID: String?
    var type: EntryType?
    /// `offline` and `rules-error`: what is wrong, one line.
    var message: String?
    /// `scan-end` and `synced`: how much (`EventCounts`).
    var counts: EventCounts?
    /// `conflict`: the copy and the versions (`ConflictDetails`).
    var conflict: ConflictDetails?
    /// Its number in the mount's journal (`EventJournal`), set when it is published.
    var sequence: UInt64?

    init(
        kind: Kind, path: String, oldPath: String? = nil, origin: Origin?, fileID: FileID?, type: EntryType?,
        message: String? = nil, counts: EventCounts? = nil, conflict: ConflictDetails? = nil,
        time: String = ChangeEvent.timestamp()
    ) {
        self.time = time
        self.path = path
        self.oldPath = oldPath
        self.kind = kind
        self.origin = origin
        self.fileID = fileID?.hex
        self.type = type
        self.message = message
        self.counts = counts
        self.conflict = conflict
    }

    /// Events about the whole mount, not one entry: every subscriber gets them.
    var isMountLevel: Bool {
        kind == .online || kind == .offline || kind == .guardHeld || kind == .guardReleased || kind == .guardDiscarded
            || kind == .treeCorrected
            || kind == .scanBegin || kind == .scanEnd || kind == .synced
            || kind == .paused || kind == .resumed || kind == .access || kind == .alarm
    }

    /// The event as one line of JSON with a newline, keys in a fixed order (time, cursor, kind,
    /// path, oldPath, origin, fileID, type, message, counts, conflict; absent ones left out).
    var jsonLine: [UInt8] { jsonLine(cursor: nil) }

    func jsonLine(cursor: String?) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(160 + path.utf8.count + (oldPath?.utf8.count ?? 0))
        func field(_ key: String, _ value: String?) {
            guard let value else { return }
            line.append(line.isEmpty ? UInt8(ascii: "{") : UInt8(ascii: ","))
            Self.appendJSONString(key, to: &line)
            line.append(UInt8(ascii: ":"))
            Self.appendJSONString(value, to: &line)
        }
        field("time", time)
        field("cursor", cursor)
        field("kind", kind.rawValue)
        field("path", kind == .overflow ? nil : path)
        field("oldPath", oldPath)
        field("origin", origin?.rawValue)
        field("fileID", fileID)
        field("type", type?.rawValue)
        field("message", message)
        if let counts { Self.appendObject("counts", counts, to: &line) }
        if let conflict { Self.appendObject("conflict", conflict, to: &line) }
        line.append(contentsOf: [UInt8(ascii: "}"), 10])
        return line
    }

    /// Appends `,"key":{…}` (sorted keys; `EventCounts` and `ConflictDetails` hold numbers and
    /// strings only, so their encoding cannot fail).
    private static func appendObject(_ key: String, _ value: some Encodable, to line: inout [UInt8]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let object = try? encoder.encode(value) else { return }
        line.append(UInt8(ascii: ","))
        appendJSONString(key, to: &line)
        line.append(UInt8(ascii: ":"))
        line.append(contentsOf: object)
    }

    private static func appendJSONString(_ text: String, to line: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        line.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                line.append(UInt8(ascii: "\\"))
                line.append(byte)
            case 0x0A: line.append(contentsOf: Array("\\n".utf8))
            case 0x0D: line.append(contentsOf: Array("\\r".utf8))
            case 0x09: line.append(contentsOf: Array("\\t".utf8))
            case 0..<0x20:
                line.append(contentsOf: Array("\\u00".utf8))
                line.append(hex[Int(byte >> 4)])
                line.append(hex[Int(byte & 0xF)])
            default: line.append(byte)
            }
        }
        line.append(UInt8(ascii: "\""))
    }

    /// The line that ends a stream whose subscriber fell behind.
    static func overflow() -> ChangeEvent {
        ChangeEvent(kind: .overflow, path: "", origin: nil, fileID: nil, type: nil)
    }

    /// Now, as `time` shows it.
    static func timestamp(nanoseconds: Int64 = Clock.nowNanoseconds()) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        let milliseconds = Int((nanoseconds % 1_000_000_000) / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds), 3))Z"
    }
}

/// Which events a subscriber wants (`syncfs-mount events MOUNTPOINT [PATH]`).
enum ChangeFilter: Sendable, Equatable {
    /// Every event.
    case everything
    /// Events whose `path` or `oldPath` is exactly this path (and `online`/`offline`).
    case entry(String)
    /// Events at this folder or below it (by `path` or `oldPath`): moves in and out count (and
    /// `online`/`offline`).
    case below(String)

    /// The filter for a request path: a trailing `/` watches the folder below; "" or "/" is
    /// everything. Leading slashes and `.` components are dropped.
    init(requestPath: String?) {
        guard let requestPath else {
            self = .everything
            return
        }
        let folder = requestPath.hasSuffix("/")
        let cleaned = requestPath.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
        if cleaned.isEmpty {
            self = .everything
        } else {
            self = folder ? .below(cleaned) : .entry(cleaned)
        }
    }

    func matches(_ event: ChangeEvent) -> Bool {
        // `synced` is about the whole folder: a watcher of one entry waits for that entry.
        if event.kind == .synced, case .entry = self { return false }
        if event.isMountLevel { return true }
        switch self {
        case .everything: return true
        case .entry(let path): return event.path == path || event.oldPath == path
        case .below(let folder):
            func inside(_ path: String) -> Bool {
                path == folder || (path.hasPrefix(folder) && path.utf8.dropFirst(folder.utf8.count).first == 0x2F)
            }
            return inside(event.path) || event.oldPath.map(inside) == true
        }
    }
}

/// Fans change events out to subscribers (`syncfs-mount events`).
///
/// `publish` is called by the filesystem core on the request path, usually under the namespace
/// lock (so events leave in the order the changes happened). Without a journal and with nobody
/// subscribed it costs one relaxed atomic load: check `isObserved` before building an event.
/// Otherwise it takes the hub's own lock (lock order: namespace → hub → journal memory,
/// subscription), numbers the event in the journal (`EventJournal.append`: memory only) and
/// appends it to each matching subscriber's queue; it never waits for a subscriber or the disk. A subscriber more than `limit` events
/// behind gets one `overflow` event and nothing after it (its stream ends).
///
/// Kinds published: the core publishes `created`, `modified`, `deleted`, `renamed` for local
/// changes and for remote changes applied by the follower, and `conflict` (with
/// `ConflictDetails`) when an entry is moved aside to a conflict name; the merge code publishes
/// `merged` (a merge result replaced the content) and `conflict` (a conflict copy was made, or
/// markers written: `Conflicts`) through the tree too;
/// a finished download publishes `downloaded`; the engine publishes `online`/`offline` when its
/// view of the container changes (`Reachability`) and `rules-error` (`RulesWatch`); the sync
/// rounds publish `scan-begin`, `scan-end` and `synced` (`SyncRounds`).
final class ChangeEvents: Sendable {
    private let subscriberCount = Atomic<Int>(0)
    private let subscribers = Mutex<[ObjectIdentifier: ChangeSubscription]>([:])
    /// Every event published, numbered (`events --since`); nil: none kept.
    let journal: EventJournal?

    /// A first attach is under way (`AttachTracker`): the entries the container's feed brings
    /// are counted in `scan-end`, not published one by one.
    private let attaching = Atomic<Bool>(false)

    init(journal: EventJournal? = nil) { self.journal = journal }

    /// True if anybody subscribes or a journal keeps events: build an event only then.
    @inline(__always)
    var isObserved: Bool { journal != nil || subscriberCount.load(ordering: .relaxed) > 0 }

    /// Whether a remote change of an entry is published on its own now: observed, and not part
    /// of a first attach.
    @inline(__always)
    var isObservedEntryByEntry: Bool { isObserved && !attaching.load(ordering: .relaxed) }

    /// A first attach begins (true) or is complete (false).
    func setAttaching(_ value: Bool) { attaching.store(value, ordering: .relaxed) }

    /// Numbers `event` in the journal and hands it to every subscriber whose filter matches.
    /// Never blocks on a subscriber or the disk.
    func publish(_ event: ChangeEvent) {
        guard isObserved else { return }
        subscribers.withLock { all in
            var event = event
            if let journal { event.sequence = journal.append(event) }
            for subscription in all.values where subscription.filter.matches(event) {
                subscription.enqueue(event)
            }
        }
    }

    /// A new subscription; end it with `cancel()`.
    func subscribe(_ filter: ChangeFilter, limit: Int = 10_000) -> ChangeSubscription {
        subscribeAtPosition(filter, limit: limit).subscription
    }

    /// A new subscription and the journal's last sequence number, taken together: the
    /// subscription gets exactly the events numbered after `position` (nil without a journal).
    func subscribeAtPosition(_ filter: ChangeFilter, limit: Int = 10_000) -> (
        subscription: ChangeSubscription, position: UInt64?
    ) {
        let subscription = ChangeSubscription(filter: filter, limit: limit, hub: self)
        let position = subscribers.withLock { all in
            all[ObjectIdentifier(subscription)] = subscription
            return journal?.lastSequence
        }
        subscriberCount.add(1, ordering: .relaxed)
        return (subscription, position)
    }

    /// Ends every subscription (the daemon is stopping): their `next` returns `.closed`.
    func closeAll() {
        let all = subscribers.withLock { all in
            defer { all.removeAll() }
            return Array(all.values)
        }
        subscriberCount.subtract(all.count, ordering: .relaxed)
        for subscription in all { subscription.close() }
    }

    fileprivate func remove(_ subscription: ChangeSubscription) {
        let removed = subscribers.withLock { $0.removeValue(forKey: ObjectIdentifier(subscription)) != nil }
        if removed { subscriberCount.subtract(1, ordering: .relaxed) }
    }
}

/// One subscriber's bounded queue of events.
final class ChangeSubscription: @unchecked Sendable {
    /// What `next` found.
    enum Next: Sendable, Equatable {
        case event(ChangeEvent)
        /// The subscriber fell behind; this is the last thing it gets.
        case overflow
        case timedOut
        /// Cancelled, or the hub closed.
        case closed
    }

    let filter: ChangeFilter
    private let limit: Int
    private weak var hub: ChangeEvents?
    // State behind `condition` (an NSCondition is also its lock).
    private let condition = NSCondition()
    private var queue: [ChangeEvent] = []
    private var head = 0
    private var overflowed = false
    private var overflowDelivered = false
    private var closed = false

    fileprivate init(filter: ChangeFilter, limit: Int, hub: ChangeEvents) {
        self.filter = filter
        self.limit = max(1, limit)
        self.hub = hub
    }

    fileprivate func enqueue(_ event: ChangeEvent) {
        condition.lock()
        defer { condition.unlock() }
        guard !closed, !overflowed else { return }
        if queue.count - head >= limit {
            overflowed = true
        } else {
            queue.append(event)
        }
        condition.signal()
    }

    /// The next event, waiting at most `timeout` seconds.
    func next(timeout: Double) -> Next {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if head < queue.count {
                let event = queue[head]
                head += 1
                if head > 1024 && head * 2 > queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
                return .event(event)
            }
            if overflowed {
                if overflowDelivered { return .closed }
                overflowDelivered = true
                return .overflow
            }
            if closed { return .closed }
            if Date() >= deadline { return .timedOut }
            _ = condition.wait(until: deadline)
        }
    }

    /// Events queued and not yet taken.
    var backlog: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count - head
    }

    /// Stops the subscription; `next` returns `.closed` once the queue is empty.
    func cancel() {
        hub?.remove(self)
        close()
    }

    fileprivate func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
