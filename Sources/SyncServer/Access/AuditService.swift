import Foundation
import ServiceLifecycle

/// The audit log's part of the server's life: prunes lines older than the retention at start and
/// once a day, and flushes the queued lines (`AuditLog.note`) when the server stops.
struct AuditService: Service {
    /// Audit lines are kept a year unless `serve --audit-days` says otherwise.
    static let defaultRetentionDays = 365
    static let pruneInterval: Duration = .seconds(86_400)

    let log: AuditLog
    let retentionDays: Int

    func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await prune()
                do { try await Task.sleep(for: Self.pruneInterval) } catch { return }
            }
        }
        await log.flush()
    }

    private func prune() async {
        let before = AccessControl.unixNow() - Int64(retentionDays) * 86_400
        do throws(SyncServerError) {
            _ = try await log.store.pruneAudit(before: before)
        } catch {
            log.logger.error("cannot prune the audit log", metadata: ["error": "\(error)"])
        }
    }
}
