import Testing

@testable import SyncFS

@Suite("SyncSummary: the mount in one line (systemd's STATUS=)")
struct SyncSummaryTests {
    @Test func aHeldGuardIsSaidFirstWithTheWayOut() {
        let held = SyncSummary(online: true, changesWaiting: 26, caughtUp: true, conflicts: 0, guardHeld: true)
        #expect(
            held.line
                == "online, uploads held by the mass-delete guard (syncfs-mount release or discard), 26 changes waiting"
        )
        let free = SyncSummary(online: true, changesWaiting: 26, caughtUp: true, conflicts: 0)
        #expect(free.line == "online, 26 changes waiting")
        let offline = SyncSummary(online: false, changesWaiting: 1, caughtUp: false, conflicts: 2, guardHeld: true)
        #expect(offline.line.hasPrefix("offline, uploads held by the mass-delete guard"))
        #expect(offline.line.hasSuffix("1 change waiting, 2 conflicts"))
    }

    @Test func aPauseIsSaidFirstWithTheWayOut() {
        let paused = SyncSummary(
            online: true, changesWaiting: 3, caughtUp: true, conflicts: 1, guardHeld: true, paused: true)
        #expect(paused.line == "paused (syncfs-mount resume), 3 changes waiting, 1 conflict")
    }
}
