import SyncBackend

/// One entry with local changes the container has not committed yet (a row of the outbox).
struct OutboxItem: Equatable, Sendable {
    var fileID: FileID
    /// Order of the entry's first pending change: uploads go oldest first, which is an order the
    /// container accepts (a directory is made before what is put in it).
    var seq: UInt64
    /// Bumped by every change after the first; an upload removes the item only if it did not
    /// change while the upload ran (re-dirtied during upload → uploaded again).
    var generation: UInt64
    /// Not before this time (ns): the quiet delay after the last change, or the backoff after a
    /// failure. Not stored: after a restart every item is ready once the quiet delay passed.
    var readyAt: Int64
    /// Failed attempts since the item was queued or last succeeded.
    var attempts: Int
    /// Why the last attempt failed, for `syncfs-mount status`.
    var lastError: String?
}
