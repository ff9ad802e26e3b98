import Foundation
import SyncBackend

/// How an `events` stream begins (doc/CLI.md, "events"): the subscription, the journal's cursor
/// at the moment it began, and the lines that go out before the live events: the journal's
/// events after `--since`'s cursor; or, for `--snapshot` or a cursor that cannot be continued
/// (`reset` first), one `entry` line per entry and `snapshot-end`. The subscription and what
/// comes before it are taken at one moment (the journal's position, or the namespace lock), so
/// the live events follow them with no gap and no duplicate.
struct EventStreamOpening {
    let subscription: ChangeSubscription
    let cursor: String?
    let lines: [[UInt8]]

    /// Keeps the lines of entries and events whose state is one of `states` (nil: all).
    struct StateFilter: Sendable {
        let states: Set<ContentState>?

        /// The states named in a request; an unknown name is an error naming the valid ones.
        static func parse(_ names: [String]?) -> Result<StateFilter, EventStreamRefusal> {
            guard let names else { return .success(StateFilter(states: nil)) }
            var states = Set<ContentState>()
            for name in names {
                guard let state = ContentState(rawValue: name) else {
                    let valid = ContentState.allCases.map(\.rawValue).joined(separator: ", ")
                    return .failure(EventStreamRefusal(message: "unknown state \"\(name)\" (valid: \(valid))"))
                }
                states.insert(state)
            }
            return .success(StateFilter(states: states))
        }

        /// Whether a live or replayed event goes out: mount events and deletions always do;
        /// another event if its entry is now in one of the states (or no longer in the tree).
        func admits(_ event: ChangeEvent, fileSystem: SyncFileSystem) -> Bool {
            guard let states else { return true }
            if event.isMountLevel || event.kind == .deleted { return true }
            guard let id = event.fileID.flatMap(FileID.init(hex:)) else { return true }
            guard let state = fileSystem.contentState(ofFileID: id) else { return true }
            return states.contains(state)
        }
    }

    static func open(
        _ request: ControlRequest, filter: ChangeFilter, states: StateFilter, fileSystem: SyncFileSystem
    ) -> EventStreamOpening {
        let events = fileSystem.changeEvents
        let journal = events.journal
        if let since = request.since {
            guard let journal else {
                return snapshot(filter, states, fileSystem, reset: "this mount keeps no events journal")
            }
            let (subscription, position) = events.subscribeAtPosition(filter)
            switch journal.replay(after: since, through: position ?? 0) {
            case .events(let replayed):
                let lines = replayed.filter { filter.matches($0) && states.admits($0, fileSystem: fileSystem) }
                    .map { $0.jsonLine(cursor: $0.sequence.map(journal.cursor)) }
                return EventStreamOpening(
                    subscription: subscription, cursor: position.map(journal.cursor), lines: lines)
            case .reset(let reason):
                subscription.cancel()
                return snapshot(filter, states, fileSystem, reset: reason)
            }
        }
        if request.snapshot == true { return snapshot(filter, states, fileSystem, reset: nil) }
        let (subscription, position) = events.subscribeAtPosition(filter)
        return EventStreamOpening(
            subscription: subscription, cursor: position.flatMap { journal?.cursor($0) }, lines: [])
    }

    /// `reset` (if given), the entries below the filter's path, `snapshot-end`.
    private static func snapshot(
        _ filter: ChangeFilter, _ states: StateFilter, _ fileSystem: SyncFileSystem, reset: String?
    ) -> EventStreamOpening {
        let events = fileSystem.changeEvents
        let path: String
        switch filter {
        case .everything: path = ""
        case .entry(let entry): path = entry
        case .below(let folder): path = folder
        }
        let (entries, (subscription, position)) = fileSystem.snapshot(below: path) {
            events.subscribeAtPosition(filter)
        }
        let cursor = position.flatMap { events.journal?.cursor($0) }
        var lines: [[UInt8]] = []
        if let reset { lines.append(StreamLine(kind: "reset", message: reset).json) }
        for entry in entries where states.states?.contains(entry.state) ?? true {
            lines.append(StreamLine(entry).json)
        }
        lines.append(StreamLine(kind: "snapshot-end", cursor: cursor).json)
        return EventStreamOpening(subscription: subscription, cursor: cursor, lines: lines)
    }
}

/// A request the stream refuses (the `error` of its answer).
struct EventStreamRefusal: Error {
    var message: String
}

/// A line of an `events` stream that is not a change: `reset`, `entry`, `snapshot-end`; keys
/// in a fixed order, as `ChangeEvent.jsonLine` (time, cursor, kind, path, fileID, type, size,
/// state, progress, message; absent ones left out).
private struct StreamLine {
    struct Progress {
        var done: Int64
        var total: Int64
    }

    var time = ChangeEvent.timestamp()
    var cursor: String?
    var kind: String
    var path: String?
    var fileID: String?
    var type: String?
    var size: Int64?
    var state: String?
    var progress: Progress?
    var message: String?

    init(kind: String, cursor: String? = nil, message: String? = nil) {
        self.kind = kind
        self.cursor = cursor
        self.message = message
    }

    init(_ entry: SnapshotEntry) {
        kind = "entry"
        path = entry.path
        fileID = entry.fileID.hex
        type = ChangeEvent.EntryType(entry.kind).rawValue
        size = entry.size
        state = entry.state.rawValue
        progress = entry.progress.map { Progress(done: $0.done, total: $0.total) }
    }

    var json: [UInt8] {
        var fields: [String] = []
        func field(_ key: String, _ value: String?) {
            guard let value else { return }
            fields.append(Self.quoted(key) + ":" + Self.quoted(value))
        }
        func number(_ key: String, _ value: Int64?) {
            guard let value else { return }
            fields.append(Self.quoted(key) + ":" + String(value))
        }
        field("time", time)
        field("cursor", cursor)
        field("kind", kind)
        field("path", path)
        field("fileID", fileID)
        field("type", type)
        number("size", size)
        field("state", state)
        if let progress {
            fields.append(#""progress":{"done":\#(progress.done),"total":\#(progress.total)}"#)
        }
        field("message", message)
        return Array(("{" + fields.joined(separator: ",") + "}\n").utf8)
    }

    /// A JSON string (escaped by the encoder: names are any bytes a file system allows).
    private static func quoted(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        guard let encoded = try? encoder.encode(text) else { return "\"\"" }
        return String(decoding: encoded, as: UTF8.self)
    }
}
