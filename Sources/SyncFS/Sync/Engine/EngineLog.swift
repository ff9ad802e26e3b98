import Logging
import SyncBackend

/// The engine's log lines about failures and transfers (doc/SEMANTICS.md, "Logs"): entries are
/// named by their path (resolved when the line is written; the ID too, which survives renames),
/// a repeated failure costs a bounded number of lines (`RepeatedFailureLog`), and `--log-level
/// debug` shows one line per transfer. Shared by the uploader and the follower.
struct EngineLog: Sendable {
    let logger: Logger
    let fileSystem: SyncFileSystem

    /// `path (id)` of the entry now, or `id (not in the tree)`, for a log line. The path is the
    /// folder's own names, made one printable line (a remote name may hold a line break).
    func logName(_ id: FileID) -> String {
        guard let path = fileSystem.displayPath(of: id) else { return "\(id.hex) (not in the tree)" }
        return "\(LogText.line(path)) (\(id.hex))"
    }

    /// Logs a failed upload of `item`: the first of its kind, then at most one summary per
    /// interval (`RepeatedFailureLog`).
    func logUploadFailure(_ item: OutboxItem, _ error: SyncFailure) {
        let log = fileSystem.outbox.failureLog
        let admitted = log.admit(error.logKind(for: item.fileID), now: fileSystem.outbox.now)
        guard admitted.logged else { return }
        if admitted.suppressed > 0 {
            logger.notice(
                "uploads still failing: \(admitted.suppressed) more attempts failed like this since the last line; now \(logName(item.fileID)): \(error)"
            )
        } else {
            logger.notice("upload of \(logName(item.fileID)) failed (attempt \(item.attempts + 1)): \(error)")
        }
    }

    /// An upload attempt of `item` ended without a failure: this entry's own failures end, and
    /// the container's transient ones if the container answered since they last happened (an
    /// attempt can end without a container call: nothing to upload, the file busy). Each ended
    /// kind gets its one closing line.
    func logUploadSucceeded(_ item: OutboxItem) {
        let log = fileSystem.outbox.failureLog
        let own = item.fileID.hex + ": "
        let matches = { (kind: String) in SyncFailure.containerKinds.contains(kind) || kind.hasPrefix(own) }
        guard log.isFailing(matching: matches) else { return }
        let now = fileSystem.outbox.now
        let answered = fileSystem.outbox.lastAnswerAt.load(ordering: .relaxed)
        let ended =
            log.end(now: now, matching: { $0.hasPrefix(own) })
            + log.end(now: now, failedBefore: answered, matching: { SyncFailure.containerKinds.contains($0) })
        for ended in ended {
            let what = ended.kind.hasPrefix(own) ? "the upload of \(logName(item.fileID))" : "uploads (\(ended.kind))"
            logger.notice(
                "\(what) work again after \(RepeatedFailureLog.duration(ended.lasted)) and \(ended.failures) failed attempts"
            )
        }
    }

    /// Logs a failure of the follower: first, summaries, as `logUploadFailure`.
    func logFollowerFailure(_ error: SyncFailure) {
        let admitted = fileSystem.outbox.failureLog.admit(error.followerLogKind, now: fileSystem.outbox.now)
        guard admitted.logged else { return }
        let left = admitted.suppressed > 0 ? " (\(admitted.suppressed) more since the last line)" : ""
        logger.notice("following the container failed: \(error); retrying\(left)")
    }

    /// The follower got an answer: its failures end with one line.
    func logFollowerSucceeded() {
        let log = fileSystem.outbox.failureLog
        let matches = { (kind: String) in kind.hasPrefix(SyncFailure.followerPrefix) }
        guard log.isFailing(matching: matches) else { return }
        for ended in log.end(now: fileSystem.outbox.now, matching: matches) {
            logger.notice(
                "following the container works again after \(RepeatedFailureLog.duration(ended.lasted)) and \(ended.failures) failed attempts"
            )
        }
    }

    /// The debug line for a content merge of `id` (its outcome has its own line at notice).
    func logMerge(_ id: FileID, ours: EntryState, theirs: RemoteEntry, started: Int64) {
        guard logger.logLevel <= .debug else { return }
        let seconds = Double(fileSystem.outbox.now - started) / 1e9
        logger.debug(
            "merged the content of \(logName(id)): \(ours.size) bytes here, \(theirs.state.size) bytes in container version \(theirs.version), in \(LogText.seconds(seconds))"
        )
    }

    /// The debug line for a finished content upload of `id`.
    func logUploadTransfer(_ id: FileID, bytes: Int64, chunks: Int, sent: Int, sentBytes: Int64, started: Int64) {
        guard logger.logLevel <= .debug else { return }
        let seconds = Double(fileSystem.outbox.now - started) / 1e9
        logger.debug(
            "uploaded \(logName(id)): \(bytes) bytes in \(chunks) chunks (\(sent) sent, \(sentBytes) bytes compressed; \(chunks - sent) already in the container) in \(LogText.seconds(seconds))"
        )
    }

    /// A file's content committed in a batch (`Uploader.uploadTogether`), at debug level.
    func logUploadInBatch(_ id: FileID, bytes: Int64, chunks: Int, batch: Int) {
        guard logger.logLevel <= .debug else { return }
        logger.debug("uploaded \(logName(id)): \(bytes) bytes in \(chunks) chunks, in a batch of \(batch) changes")
    }

    /// A batch of changes committed together (`Uploader.uploadTogether`), at debug level.
    func logUploadBatch(changes: Int, bytes: Int64, sent: Int, sentBytes: Int64, started: Int64) {
        guard logger.logLevel <= .debug else { return }
        let seconds = Double(fileSystem.outbox.now - started) / 1e9
        logger.debug(
            "committed a batch of \(changes) changes: \(bytes) bytes of content (\(sent) chunks sent, \(sentBytes) bytes compressed) in \(LogText.seconds(seconds))"
        )
    }
}

extension SyncFailure {
    /// The kinds of the container's transient failures (`logKind`): one episode each, whichever
    /// entry met them.
    static let containerKinds: Set<String> = ["busy", "unavailable", "storageFailure"]
    static let followerPrefix = "follower: "

    /// The follower's failure kinds: the container's transient states are one kind each (their
    /// messages vary with each attempt: an address, an errno), anything else by its message.
    var followerLogKind: String {
        switch self {
        case .container(.busy): return Self.followerPrefix + "busy"
        case .container(.unavailable): return Self.followerPrefix + "unavailable"
        case .container(.storageFailure): return Self.followerPrefix + "storageFailure"
        default: return Self.followerPrefix + description
        }
    }
}
