import Foundation
import Logging

/// The engine's side of `pause` and `resume` (`SyncPause`; doc/SEMANTICS.md, "Pausing a mount").
extension SyncEngine {
    /// The pause, restored from the `paused` fact; each change recorded there, logged and
    /// published as a `paused` or `resumed` event.
    static func makePause(fileSystem: SyncFileSystem, logger: Logger) -> SyncPause {
        let stored = fileSystem.storedFacts[.paused]
        if let stored, stored.until.map({ $0 > Date() }) ?? true {
            logger.notice("still paused (\(Self.pauseText(stored))); `syncfs-mount resume` ends it")
        }
        return SyncPause(
            restoring: stored,
            record: { [store = fileSystem.store] state in store.factSet(.paused, state) },
            announce: { [events = fileSystem.changeEvents] change in
                let kind: ChangeEvent.Kind
                let message: String
                switch change {
                case .paused(let state):
                    kind = .paused
                    message = Self.pauseText(state)
                case .resumed(let expired):
                    kind = .resumed
                    message = expired ? "the pause ended" : "resumed"
                }
                logger.notice("\(kind == .paused ? "paused: " : "resumed: ")\(message)")
                events.publish(ChangeEvent(kind: kind, path: "", origin: nil, fileID: nil, type: nil, message: message))
            })
    }

    /// `until 2026-11-29T21:30:00Z, uploads and the feed` (what a `paused` event says).
    static func pauseText(_ state: PauseState) -> String {
        (state.until.map { "until \(RFC3339.utc($0))" } ?? "until resume")
            + (state.scope == .all ? ", all transfers" : ", uploads and the feed")
    }

    /// Rewires the parts at each change of the pause: paused, the follower's wait on the feed
    /// ends (it then waits on the pause); with all transfers, placeholders have no source (a
    /// read fails as offline); resumed, the downloader is the source again and the rounds look.
    func observePause() {
        pause.observe {
            [run, follower, downloader, rounds, hydrations = fileSystem.residency.hydrations] state in
            guard run.isRunning else { return }
            hydrations.setChunkSource(state?.scope == .all ? nil : downloader as any ChunkSource)
            if state != nil { follower.stopWaiting.interrupt() }
            rounds.check()
        }
    }
}
