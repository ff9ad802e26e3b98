import Foundation
import Glibc
import SyncBackend

/// Runs `merge=command:` merges off the uploader (doc/SEMANTICS.md, "Merge commands run on their
/// own"): a slow command delays only its own file, never the uploads of the others.
///
/// Contract: the uploader asks `answer(for:inputs:park:)` when a file's merge needs a command.
/// `.idle`: nothing is known for these inputs; the uploader reads the three versions and calls
/// `start`, which queues the command (at most `slots` run at once and `slots` wait in order,
/// holding their versions in memory; more files wait parked, without reading them, and are woken
/// as the queue drains; at most one command per file) and parks the file. Parked, the file stays in the queue (its change is
/// persisted there) until the command ends and `Outbox.expedite` makes it ready again; the next
/// `answer` with the same inputs takes the result (ownership of its temporary file passes to
/// the caller). A result whose inputs no longer match (the file changed here or in the container
/// meanwhile) is dropped and the merge starts again on the new versions. Nothing of a merge is
/// committed by the worker: a daemon that stops mid-merge loses only the command's work; the
/// file's change is still queued and is merged again after the restart.
final class MergeCommandWorker: @unchecked Sendable {
    /// What a merge's result depends on: the same inputs give the same merge.
    struct Inputs: Hashable, Sendable {
        var command: String
        var path: String
        var theirsVersion: EntryVersion
        var ours: [ChunkRef]
        var theirs: [ChunkRef]
        var base: [ChunkRef]
    }

    typealias Outcome = Result<ContentResolution, SyncFailure>

    enum Answer {
        /// Nothing known for these inputs: read the versions and `start`.
        case idle
        /// The command runs (or waits for a slot); the file was parked.
        case waiting
        /// The command's outcome; its temporary file, if any, is the caller's now.
        case done(Outcome)
    }

    private enum Job {
        case queued(Inputs, work: @Sendable () -> Outcome)
        case running(Inputs)
        /// Ran with `Inputs`; newer inputs wait for it to end (one command per file at a time).
        case runningStale(Inputs)
        case finished(Inputs, Outcome)
    }

    /// Commands run at once at most.
    let slots: Int
    private let outbox: Outbox
    private let condition = NSCondition()
    /// The running commands' threads (never joined: a command ends by its own timeout).
    private let commands = WorkerGroup()
    private var jobs: [FileID: Job] = [:]
    private var order: [FileID] = []
    private var running = 0
    /// Files that found the queue full: woken (`Outbox.expedite`), oldest first, as it drains.
    private var wantTurn: [FileID] = []
    private var stopped = false

    init(outbox: Outbox, slots: Int = 2) {
        self.outbox = outbox
        self.slots = max(1, slots)
    }

    /// What is known of the file's merge with `inputs`. `park` (hand the item back to the queue
    /// for a long wait) is called under the worker's lock when the answer is `.waiting`, so a
    /// command that ends meanwhile always finds the item parked and wakes it.
    func answer(for id: FileID, inputs: Inputs, park: () -> Void) -> Answer {
        condition.lock()
        defer { condition.unlock() }
        switch jobs[id] {
        case .finished(let done, let outcome):
            jobs[id] = nil
            if done == inputs { return .done(outcome) }
            Self.discard(outcome)
            return .idle
        case .queued(let queued, _) where queued != inputs:
            // Not started yet: replaced by a merge of the new versions.
            jobs[id] = nil
            order.removeAll { $0 == id }
            return .idle
        case .running(let ran) where ran != inputs:
            jobs[id] = .runningStale(ran)
            park()
            return .waiting
        case .queued, .running, .runningStale:
            park()
            return .waiting
        case nil:
            // A queued job holds its three versions in memory (up to 3 × 64 MiB): at most
            // `slots` wait; more files wait parked, without reading them, for a turn.
            guard order.count < slots else {
                if !wantTurn.contains(id) { wantTurn.append(id) }
                park()
                return .waiting
            }
            wantTurn.removeAll { $0 == id }
            return .idle
        }
    }

    /// Queues the file's merge (after `.idle`) and parks the file.
    func start(_ id: FileID, inputs: Inputs, park: () -> Void, work: @escaping @Sendable () -> Outcome) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, jobs.index(forKey: id) == nil else {
            park()
            return
        }
        jobs[id] = .queued(inputs, work: work)
        order.append(id)
        park()
        startQueued()
    }

    /// Whether a command for `id` is queued or running (for tests and `status`).
    func isBusy(_ id: FileID) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        switch jobs[id] {
        case .queued, .running, .runningStale: return true
        case .finished, nil: return false
        }
    }

    /// The engine stops: nothing more starts; results not taken are dropped (their files
    /// removed). Running commands end by themselves (their timeout) and drop their results.
    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        for case .finished(_, let outcome) in jobs.values { Self.discard(outcome) }
        jobs = [:]
        order = []
        wantTurn = []
    }

    /// Starts queued jobs while slots are free. Under the lock.
    private func startQueued() {
        while running < slots, !stopped, let index = order.firstIndex(where: { Self.isQueued(jobs[$0]) }) {
            let id = order.remove(at: index)
            guard case .queued(let inputs, let work) = jobs[id] else { continue }
            jobs[id] = .running(inputs)
            running += 1
            commands.start("syncfs-merge") { [self] _ in
                let outcome = work()
                finish(id, inputs: inputs, outcome: outcome)
            }
        }
    }

    private func finish(_ id: FileID, inputs: Inputs, outcome: Outcome) {
        condition.lock()
        defer { condition.unlock() }
        running -= 1
        if stopped {
            Self.discard(outcome)
            return
        }
        if case .running = jobs[id], outbox.isPending(id) {
            jobs[id] = .finished(inputs, outcome)
        } else {
            // Or its change is no longer queued (deleted, taken over by a remote version).
            // The file changed while it ran: this result is stale; the next try merges again.
            jobs[id] = nil
            Self.discard(outcome)
        }
        outbox.expedite(id)
        startQueued()
        for waiting in wantTurn.prefix(max(0, slots - order.count)) { outbox.expedite(waiting) }
    }

    private static func isQueued(_ job: Job?) -> Bool {
        if case .queued = job { return true }
        return false
    }

    private static func discard(_ outcome: Outcome) {
        if case .success(.merged(let path, _)) = outcome { unlink(path) }
    }
}
