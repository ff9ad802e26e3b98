import SyncBackend
import SyncFS

/// `status`'s line for a mount whose container grants a viewer's rights only (doc/SEMANTICS.md,
/// "A viewer's mount"): `read-only: this token has a viewer's rights in 'box'`, and how many
/// queued changes wait for write access. Nothing for a writable mount.
enum AccessStatusLine {
    static func text(_ access: AccessStatus?, waiting: Int) -> String? {
        guard let access, isReadOnly(access) else { return nil }
        var line = "read-only: this token has a viewer's rights in '\(access.container)'"
        if waiting > 0 {
            line +=
                "; \(HumanUnits.count(waiting, "queued change")) \(waiting == 1 ? "waits" : "wait") for write access"
        }
        return line
    }

    /// Whether the container grants this mount a viewer's rights only.
    static func isReadOnly(_ access: AccessStatus?) -> Bool {
        access.map { !$0.role.canWrite } ?? false
    }
}
