import Logging
import Synchronization

/// The server's writer of audit lines (`AccessStore.appendAudit`), in two ways:
/// - `record` writes at once and waits: logins, refusals, token and role changes — the lines a
///   security review needs even if the server dies a moment later.
/// - `note` queues a line and returns: commit summaries, one per commit request, written by a
///   flush at most `flushDelay` later (or at `flush()`, which a graceful stop calls). A crash
///   loses at most that second of summaries, never a change to who may do what; and a commit
///   waits for no second database.
///
/// A line that cannot be written is logged (error level) and dropped: the audit log never fails
/// a request that already happened.
public final class AuditLog: Sendable {
    static let flushDelay: Duration = .seconds(1)
    static let queueLimit = 10_000

    let store: any AccessStore
    let logger: Logger
    /// When each kind of refusal was last noted (`SyncResponder` notes one a minute per key).
    let refusals = OncePerMinute()
    private let queue = Mutex<(lines: [AuditRecord], scheduled: Bool)>(([], false))

    public init(store: any AccessStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Writes `line` now.
    public func record(_ line: AuditRecord) async {
        do throws(SyncServerError) {
            try await store.appendAudit(line)
        } catch {
            logger.error("cannot write an audit line", metadata: ["action": "\(line.action)", "error": "\(error)"])
        }
    }

    /// Queues `line` for the next flush. Past `queueLimit` queued lines, every line but a commit
    /// summary is dropped (refusals, link uses; each drop is a warning in the server's log).
    public func note(_ line: AuditRecord) {
        let (schedule, dropped) = queue.withLock { queue -> (Bool, Bool) in
            let keep = queue.lines.count < Self.queueLimit || line.action == AuditAction.commit.rawValue
            if keep { queue.lines.append(line) }
            defer { queue.scheduled = true }
            return (!queue.scheduled, !keep)
        }
        if dropped { logger.warning("audit queue full: a \(line.action) line was dropped") }
        guard schedule else { return }
        Task {
            try? await Task.sleep(for: Self.flushDelay)
            await self.flush()
        }
    }

    /// Writes every queued line.
    public func flush() async {
        let lines = queue.withLock { queue -> [AuditRecord] in
            defer { queue = ([], false) }
            return queue.lines
        }
        guard !lines.isEmpty else { return }
        do throws(SyncServerError) {
            try await store.appendAudit(lines: lines)
        } catch {
            logger.error("cannot write \(lines.count) audit lines", metadata: ["error": "\(error)"])
        }
    }
}
