import Foundation
import Glibc
import Logging
import SyncBackend

/// The mount's bounded journal of the events it publishes (`events --since CURSOR`; doc/CLI.md,
/// "events"), kept in the state directory (`EventJournalFile`) so it survives a restart.
///
/// Cost on the request path: `append` (called by `ChangeEvents.publish` under the hub's lock)
/// takes a number and adds the event to a list in memory; a writer thread of its own writes
/// what gathered there every `Bounds.writeDelay` seconds in one `write`, never an `fsync` (the
/// journal survives the daemon's kill -9; a power loss may cost the last events, which the
/// numbering then tells, see below). Bounds: the file keeps the last `Bounds.events` events of the
/// last `Bounds.age`; it is rewritten without the older ones once it holds twice that many (each
/// event is then rewritten at most once: a first attach of a million entries, a million events,
/// rewrote each four times with a quarter more), or its oldest event is older than the age by
/// more than `Bounds.ageSlack`.
///
/// Cursors: every event has the next sequence number. A daemon that stopped without `close`
/// (kill -9, a crash) may have lost events it had numbered but not written: the next start skips
/// `sequenceSkip` numbers and writes a hole, so no number is given twice. `replay` answers the
/// events after a cursor only when it has every one of them (no hole, nothing trimmed, nothing
/// missing); else `reset`.
///
/// Locks: `memory` (the list and the numbers) is taken under the hub's lock; `fileLock` (the
/// file) is taken first when both are needed: hub → memory, fileLock → memory.
final class EventJournal: @unchecked Sendable {
    struct Bounds: Sendable {
        /// At most this many events are kept.
        var events = 100_000
        /// Events older than this (nanoseconds) are dropped.
        var age: Int64 = 7 * 24 * 3_600 * 1_000_000_000
        /// How much older than `age` the oldest event may get before the file is trimmed.
        var ageSlack: Int64 = 3_600 * 1_000_000_000
        /// How long an event may wait in memory before the writer writes it (seconds).
        var writeDelay = 0.1
    }

    /// What `replay` found.
    enum Replay: Equatable {
        /// Every event after the cursor, in order, each with its `sequence`.
        case events([ChangeEvent])
        /// The cursor cannot be continued; why, in a few words.
        case reset(String)
    }

    /// How many numbers a start after an unclean stop skips (more than could wait unwritten).
    static let sequenceSkip: UInt64 = 1 << 32

    let identity: String
    let path: String
    private let bounds: Bounds
    private let logger: Logger
    private let clock: @Sendable () -> Int64

    // Behind `memory`.
    private let memory = NSCondition()
    private var pending: [(sequence: UInt64, nanoseconds: Int64, event: ChangeEvent)] = []
    private var nextSequence: UInt64
    private var closing = false

    // Behind `fileLock`.
    private let fileLock = NSLock()
    private var descriptor: Int32 = -1
    private var floor: UInt64
    /// The highest sequence number in the file (events, holes, a clean close).
    private var lastWritten: UInt64
    private var recordCount = 0
    private var oldestNanoseconds: Int64?
    private var writeFailed = false

    private let writerDone = DispatchSemaphore(value: 0)

    /// Opens (or starts) the journal of the state directory `directory`. A file that is not a
    /// journal is set aside (renamed `events.journal.damaged-SECONDS`, with a log line) and a new
    /// journal starts; nil only if no journal file can be written there (logged; the mount runs
    /// without one and `--since` answers `reset`). `anew`: the state database is new (its
    /// first mount), so the events of an earlier one describe another tree: a new journal starts.
    static func open(
        directory: String, anew: Bool = false, bounds: Bounds = Bounds(), logger: Logger,
        clock: @escaping @Sendable () -> Int64 = Clock.nowNanoseconds
    ) -> EventJournal? {
        let path = directory + "/" + EventJournalFile.name
        var contents: EventJournalFile.Contents?
        if anew && unlink(path) == 0 {
            logger.info("events journal \(path): the state database is new, so is the journal")
        }
        if let data = readFile(path) {
            do throws(EventJournalFile.Damage) {
                contents = try EventJournalFile.parse(data)
                if let whole = contents?.validLength, whole < data.count {
                    logger.warning("events journal \(path): a line cut short at its end is dropped")
                    _ = truncate(path, off_t(whole))
                }
            } catch {
                let aside = path + ".damaged-\(clock() / 1_000_000_000)"
                rename(path, aside)
                logger.error(
                    "events journal \(path) is damaged (\(error.reason)): set aside as \(aside); a new journal starts")
            }
        }
        let journal = EventJournal(path: path, contents: contents, bounds: bounds, logger: logger, clock: clock)
        guard journal.descriptor >= 0 else {
            logger.error("cannot write the events journal \(path): \(String(cString: strerror(errno)))")
            return nil
        }
        journal.startWriter()
        return journal
    }

    private init(
        path: String, contents: EventJournalFile.Contents?, bounds: Bounds, logger: Logger,
        clock: @escaping @Sendable () -> Int64
    ) {
        self.path = path
        self.bounds = bounds
        self.logger = logger
        self.clock = clock
        guard let contents else {
            identity = FileID.random().hex
            floor = 0
            lastWritten = 0
            nextSequence = 1
            descriptor = Self.openForAppend(path, truncating: true)
            if descriptor >= 0 && !Self.writeAll(descriptor, EventJournalFile.header(identity: identity, floor: 0)) {
                Glibc.close(descriptor)
                descriptor = -1
            }
            return
        }
        identity = contents.identity
        floor = contents.floor
        lastWritten = contents.records.last?.sequence ?? contents.floor
        recordCount = contents.records.count(where: { $0.nanoseconds != nil })
        oldestNanoseconds = contents.records.lazy.compactMap(\.nanoseconds).first
        descriptor = Self.openForAppend(path, truncating: false)
        if case .closed? = contents.records.last {
            nextSequence = lastWritten + 1
        } else {
            // Events numbered after the last one written may be lost: skip past them, and say so.
            let written = lastWritten
            let hole = written + Self.sequenceSkip
            nextSequence = hole + 1
            appendRecord(.hole(sequence: hole, nanoseconds: clock()))
            logger.info("events journal \(path): not closed last time; events after \(written) may be lost")
        }
        trimIfNeeded()
    }

    // MARK: The request path

    /// Numbers `event` and keeps it for the writer; its sequence number. Under the hub's lock.
    func append(_ event: ChangeEvent) -> UInt64 {
        memory.lock()
        defer { memory.unlock() }
        let sequence = nextSequence
        nextSequence += 1
        guard !closing else { return sequence }
        pending.append((sequence, clock(), event))
        if pending.count == 1 { memory.signal() }
        return sequence
    }

    /// The sequence number of the last event appended (0 before the first).
    var lastSequence: UInt64 {
        memory.lock()
        defer { memory.unlock() }
        return nextSequence - 1
    }

    func cursor(_ sequence: UInt64) -> String { EventCursor(journal: identity, sequence: sequence).text }

    // MARK: Replay

    /// The events after the cursor `text` up to `last` (a `lastSequence` taken when the caller
    /// subscribed), or why they cannot be given.
    func replay(after text: String, through last: UInt64) -> Replay {
        guard let cursor = EventCursor.parse(text) else { return .reset("malformed cursor") }
        guard cursor.journal == identity else { return .reset("the cursor is from another journal") }
        guard cursor.sequence <= last else { return .reset("the cursor is not one this journal gave") }
        fileLock.lock()
        defer { fileLock.unlock() }
        guard cursor.sequence >= floor else { return .reset("the events after the cursor were trimmed") }
        if cursor.sequence == last { return .events([]) }
        var expected = cursor.sequence + 1
        var events: [ChangeEvent] = []
        func take(_ sequence: UInt64, _ decode: () -> ChangeEvent?) -> String? {
            guard sequence > cursor.sequence, sequence <= last else { return nil }
            guard sequence == expected else { return "events after the cursor are missing" }
            guard var event = decode() else { return "an event after the cursor cannot be read" }
            event.sequence = sequence
            events.append(event)
            expected += 1
            return nil
        }
        guard let data = Self.readFile(path), let contents = try? EventJournalFile.parse(data) else {
            return .reset("the journal cannot be read")
        }
        for record in contents.records {
            switch record {
            case .event(let sequence, _, let json):
                if let problem = take(sequence, { try? JSONDecoder().decode(ChangeEvent.self, from: Data(json)) }) {
                    return .reset(problem)
                }
            case .hole(let sequence, _):
                if sequence > cursor.sequence { return .reset("events after the cursor were lost (unclean stop)") }
            case .closed: continue
            }
        }
        let unwritten = memory.withLock { pending }
        for item in unwritten {
            if let problem = take(item.sequence, { item.event }) { return .reset(problem) }
        }
        guard expected == last + 1 else { return .reset("events after the cursor are missing") }
        return .events(events)
    }

    // MARK: Writing

    private func startWriter() {
        let thread = Thread { [self] in
            while true {
                memory.lock()
                while pending.isEmpty && !closing { memory.wait() }
                // Gather a batch: wait the delay unless the journal is closing.
                let deadline = Date().addingTimeInterval(bounds.writeDelay)
                while !closing && Date() < deadline { _ = memory.wait(until: deadline) }
                let stop = closing
                memory.unlock()
                if stop { break }
                flush()
            }
            writerDone.signal()
        }
        thread.name = "events-journal"
        thread.start()
    }

    /// Writes every event appended so far to the file (the writer does it every `writeDelay`).
    func flush() {
        fileLock.lock()
        defer { fileLock.unlock() }
        let batch = memory.withLock { pending }
        guard !batch.isEmpty else { return }
        var bytes: [UInt8] = []
        for item in batch {
            var json = item.event.jsonLine
            json.removeLast()
            bytes +=
                EventJournalFile.Record.event(sequence: item.sequence, nanoseconds: item.nanoseconds, json: json)
                .line
        }
        if writeRecords(bytes) {
            lastWritten = batch[batch.count - 1].sequence
            recordCount += batch.count
            if oldestNanoseconds == nil { oldestNanoseconds = batch[0].nanoseconds }
        }
        memory.withLock { pending.removeFirst(batch.count) }
        trimIfNeeded()
    }

    /// Writes the rest, then a clean close, and stops the writer. Events appended later are
    /// numbered but not kept.
    func close() {
        let closedBefore = memory.withLock {
            defer { closing = true }
            memory.broadcast()
            return closing
        }
        guard !closedBefore else { return }
        writerDone.wait()
        flush()
        fileLock.lock()
        defer { fileLock.unlock() }
        guard descriptor >= 0 else { return }
        appendRecord(.closed(sequence: max(lastWritten, lastSequence)))
        _ = fdatasync(descriptor)
        Glibc.close(descriptor)
        descriptor = -1
    }

    /// Appends one record (under `fileLock`, or in `init`).
    private func appendRecord(_ record: EventJournalFile.Record) {
        if writeRecords(record.line) { lastWritten = record.sequence }
    }

    /// Appends whole lines; on failure cuts the file back to where it was, logs once, and false
    /// (the events are then missing, which `replay` tells by their numbers).
    private func writeRecords(_ bytes: [UInt8]) -> Bool {
        guard descriptor >= 0 else { return false }
        let before = lseek(descriptor, 0, SEEK_END)
        if Self.writeAll(descriptor, bytes) {
            writeFailed = false
            return true
        }
        let reason = String(cString: strerror(errno))
        if before >= 0 { _ = ftruncate(descriptor, before) }
        if !writeFailed { logger.error("cannot write the events journal \(path): \(reason)") }
        writeFailed = true
        return false
    }

    // MARK: Trimming

    private func trimIfNeeded() {
        let now = clock()
        let tooMany = recordCount > 2 * bounds.events
        let tooOld = oldestNanoseconds.map { now - $0 > bounds.age + bounds.ageSlack } ?? false
        if tooMany || tooOld { trim(now: now) }
    }

    /// Rewrites the file with the events of the last `age`, at most `events` of them.
    private func trim(now: Int64) {
        let contents: EventJournalFile.Contents
        do throws(EventJournalFile.Damage) {
            contents = try EventJournalFile.parse(Self.readFile(path) ?? [])
        } catch {
            logger.error("cannot trim the events journal \(path): \(error.reason)")
            return
        }
        let recent = contents.records.filter { record in record.nanoseconds.map { now - $0 <= bounds.age } ?? false }
        let kept = Array(recent.suffix(bounds.events))
        let dropped = contents.records.prefix { $0 != kept.first }
        var newFloor = max(floor, dropped.last?.sequence ?? floor)
        if kept.isEmpty { newFloor = max(newFloor, lastWritten) }
        let temporary = path + ".new"
        let replacement = Self.openForAppend(temporary, truncating: true)
        guard replacement >= 0 else { return }
        var bytes = EventJournalFile.header(identity: identity, floor: newFloor)
        for record in kept { bytes += record.line }
        guard Self.writeAll(replacement, bytes), fdatasync(replacement) == 0, rename(temporary, path) == 0 else {
            Glibc.close(replacement)
            unlink(temporary)
            logger.error("cannot trim the events journal \(path): \(String(cString: strerror(errno)))")
            return
        }
        Glibc.close(descriptor)
        descriptor = replacement
        floor = newFloor
        recordCount = kept.count
        oldestNanoseconds = kept.first?.nanoseconds
    }

    // MARK: Files

    private static func openForAppend(_ path: String, truncating: Bool) -> Int32 {
        let flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (truncating ? O_TRUNC : 0)
        let descriptor = Glibc.open(path, flags, 0o600)
        if descriptor >= 0 { _ = fchmod(descriptor, 0o600) }
        return descriptor
    }

    /// The whole file, or nil if it cannot be read (absent, a symlink, not a regular file).
    static func readFile(_ path: String) -> [UInt8]? {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { Glibc.close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        var data: [UInt8] = []
        data.reserveCapacity(Int(info.st_size))
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return nil }
            if count == 0 { return data }
            data += chunk[..<count]
        }
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            written += count
        }
        return true
    }
}
