import Foundation
import Logging
import SyncBackend

/// Keeps the mount's `WriteAccess` current with the role its container grants (doc/SEMANTICS.md,
/// "A viewer's mount"):
///
/// - **At the start** (before the folder is served): the role the container granted when the
///   mount opened it (`ContainerAccess.knownAccess`), else the one last recorded (`access_role`:
///   a viewer's mount that starts offline stays read-only), else an editor's.
/// - **Asked again** (thread `syncfs-access`, `runChecks`) when the container refuses a change
///   while the mount believes it may write (`onChangeRefused`), when it answers again after an
///   outage (`reconnected`), and every `viewerRecheck` while the role is a viewer's (a viewer
///   made an editor gets its changes through without a remount). A failed question changes
///   nothing.
/// - **Each change** is recorded in `access_role`, logged, and published as one `access` event;
///   back to an editor's, the queued changes go at once (the uploader sends again).
///
/// A container that grants no roles (a local one): always an editor's, and no thread.
final class AccessKeeper: @unchecked Sendable {
    /// While the role is a viewer's, the container is asked again this often.
    static let viewerRecheck: Duration = .seconds(60)

    let container: (any ContainerAccess)?
    let access: WriteAccess
    private let fileSystem: SyncFileSystem
    private let logger: Logger
    private let recheck: Duration
    private let condition = NSCondition()
    private var asked = false
    private var stopped = false
    /// Ends a question in progress when the engine stops.
    private let stopAsking = CancelHandle()

    init(
        container: (any ContainerAccess)?, fileSystem: SyncFileSystem, logger: Logger,
        recheck: Duration = AccessKeeper.viewerRecheck
    ) {
        self.container = container
        self.access = fileSystem.writeAccess
        self.fileSystem = fileSystem
        self.logger = logger
        self.recheck = recheck
        adoptInitialRole()
        container?.onChangeRefused { [weak self] in self?.changeRefused() }
    }

    /// The container refused a change: the role is read again if this mount believed it may
    /// write. A viewer's refusals (a lock claimed at the container) are expected and ask nothing:
    /// the periodic question finds a role given back.
    private func changeRefused() {
        if !access.refusesChanges { request() }
    }

    private func adoptInitialRole() {
        guard let container else { return }
        let stored = fileSystem.storedFacts[.accessRole]
        let role = container.knownAccess ?? stored ?? .editor
        access.set(role, scope: container.accessScope)
        if role != stored { fileSystem.store.factSet(.accessRole, role) }
        if role != (stored ?? .editor) {
            announce(role)
        } else if !role.canWrite {
            logger.notice("read-only: \(Self.describe(role, scope: container.accessScope))")
        }
    }

    /// Asks for the role to be read again (coalesced; the `syncfs-access` thread does it).
    func request() {
        condition.lock()
        asked = true
        condition.signal()
        condition.unlock()
    }

    /// The container answers again after an outage: its role may have changed meanwhile.
    func reconnected() { if container != nil { request() } }

    func stop() {
        stopAsking.cancel()
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// The thread's body: waits for a request (or, as a viewer, `recheck`), then asks.
    func runChecks() {
        guard container != nil else { return }
        while true {
            condition.lock()
            let deadline = Date().addingTimeInterval(Double(recheck.components.seconds))
            while !asked && !stopped {
                if access.refusesChanges {
                    if !condition.wait(until: deadline) { break }
                } else {
                    condition.wait()
                }
            }
            let stop = stopped
            asked = false
            condition.unlock()
            if stop { return }
            refresh()
        }
    }

    /// Asks the container now and adopts its answer; a failure changes nothing.
    func refresh() {
        guard let container else { return }
        do throws(ContainerProtocolError) {
            let role = try Blocking.run(cancellable: stopAsking) { () async throws(ContainerProtocolError) in
                try await container.refreshAccess()
            }
            adopt(role)
        } catch {
            logger.debug("could not read this mount's role in the container: \(error)")
        }
    }

    /// Records `role` if it is new: the fact, the log, one `access` event; an editor's again
    /// lets the queue go.
    func adopt(_ role: AccessRole) {
        guard let container, access.set(role, scope: container.accessScope) else { return }
        fileSystem.store.factSet(.accessRole, role)
        announce(role)
        // What waited for write access goes now, not after the backoff its refusals earned.
        if role.canWrite { fileSystem.outbox.expediteAll() }
    }

    private func announce(_ role: AccessRole) {
        let scope = container?.accessScope ?? ""
        let waiting = fileSystem.outbox.activeCount
        var message = role.canWrite ? "writable: " : "read-only: "
        message += Self.describe(role, scope: scope)
        if !role.canWrite && waiting > 0 {
            message += waiting == 1 ? "; 1 queued change waits" : "; \(waiting) queued changes wait"
            message += " for write access"
        }
        logger.notice("\(message)")
        fileSystem.changeEvents.publish(
            ChangeEvent(kind: .access, path: "", origin: nil, fileID: nil, type: nil, message: message))
    }

    /// "this token has a viewer's rights in 'box'".
    static func describe(_ role: AccessRole, scope: String) -> String {
        "this token has \(role == .viewer ? "a" : "an") \(role.rawValue)'s rights in '\(scope)'"
    }
}

extension EngineDelay {
    /// While the container grants a viewer's rights only, the uploader looks whether an
    /// editor's came back four times a second (the queue goes within 0.25 s of it).
    static let writeAccessPoll: Duration = .milliseconds(250)
}
