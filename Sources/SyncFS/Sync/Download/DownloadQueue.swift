import Foundation
import SyncBackend

/// The background downloader's queue: file IDs in order, each once; files that failed wait a
/// while before they are offered again.
final class DownloadQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var order: [FileID] = []
    private var queued = Set<FileID>()
    private var failedAt: [FileID: Date] = [:]
    private var stopped = false
    private var pinChanged = false

    /// Adds the IDs not queued yet (skipping recent failures unless `retrying`), at the end or
    /// before everything else (`first`: what a user asked for goes before pins); returns how many.
    func enqueue(_ ids: [FileID], retrying: Bool, first: Bool = false) -> Int {
        condition.lock()
        defer { condition.unlock() }
        var added: [FileID] = []
        for id in ids {
            if !retrying, let failed = failedAt[id], Date().timeIntervalSince(failed) < 30 { continue }
            if queued.contains(id) {
                if first, let index = order.firstIndex(of: id) { order.remove(at: index) } else { continue }
            }
            queued.insert(id)
            added.append(id)
            if retrying { failedAt[id] = nil }
        }
        if first { order.insert(contentsOf: added, at: 0) } else { order.append(contentsOf: added) }
        if !added.isEmpty { condition.broadcast() }
        return added.count
    }

    func next() -> FileID? {
        condition.lock()
        defer { condition.unlock() }
        guard !order.isEmpty else { return nil }
        let id = order.removeFirst()
        queued.remove(id)
        return id
    }

    func failed(_ id: FileID) {
        condition.lock()
        defer { condition.unlock() }
        failedAt[id] = Date()
    }

    /// Waits until `poke`, `stop`, or `timeout` passes (returns at once if something is queued and
    /// `untilQueued`).
    func wait(_ timeout: Duration, untilQueued: Bool = true) {
        condition.lock()
        defer { condition.unlock() }
        if (!untilQueued || order.isEmpty) && !stopped {
            _ = condition.wait(until: Date().addingTimeInterval(timeout / .seconds(1)))
        }
    }

    func poke() {
        condition.lock()
        defer { condition.unlock() }
        condition.broadcast()
    }

    /// A pin was set or moved: wakes the downloader, which searches for pinned placeholders
    /// again (`takePinChange`) even if it found no pin last time.
    func pokeForPins() {
        condition.lock()
        defer { condition.unlock() }
        pinChanged = true
        condition.broadcast()
    }

    /// Whether a pin changed since the last call.
    func takePinChange() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        defer { pinChanged = false }
        return pinChanged
    }

    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        condition.broadcast()
    }
}
