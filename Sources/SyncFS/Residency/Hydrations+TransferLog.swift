import SyncBackend

/// The folder's log lines about downloads (doc/SEMANTICS.md, "Logs"): one debug line per
/// finished download, and a download that fails because the container is unreachable logged
/// once per outage episode (`RepeatedFailureLog`, shared with the uploader), not once per read.
extension Hydrations {
    /// The debug line for a finished download of `id`.
    func logDownload(_ hydration: Hydration, id: FileID, started: Int64) {
        guard logger.logLevel <= .debug else { return }
        let path = live.displayPath(of: id).map(LogText.line) ?? "(no longer in the tree)"
        let local = hydration.foundOnDisk
        let seconds = Double(Clock.nowNanoseconds() - started) / 1e9
        logger.debug(
            "downloaded \(path) (\(id.hex)): \(hydration.length) bytes in \(hydration.manifest.count) chunks (\(hydration.manifest.count - local) fetched, \(local) already here) in \(LogText.seconds(seconds))"
        )
    }

    /// A download that met an unreachable container: the first, then a summary per interval.
    func logDownloadUnreachable(_ path: String, id: FileID, reason: String) {
        let admitted = outbox.failureLog.admit("download: unavailable", now: Clock.nowNanoseconds())
        guard admitted.logged else { return }
        let more =
            admitted.suppressed > 0
            ? " (\(admitted.suppressed) more downloads failed like this since the last line)" : ""
        logger.warning(
            "cannot download \(LogText.line(path)) (\(id.hex)): the container is unreachable (\(reason))\(more)")
    }

    /// A chunk arrived: downloads that failed for an unreachable container work again (one line).
    func logDownloadsWorkAgain() {
        let matches = { (kind: String) in kind == "download: unavailable" }
        guard outbox.failureLog.isFailing(matching: matches) else { return }
        for ended in outbox.failureLog.end(now: Clock.nowNanoseconds(), matching: matches) {
            logger.notice(
                "downloads work again after \(RepeatedFailureLog.duration(ended.lasted)) and \(ended.failures) failed downloads"
            )
        }
    }
}
