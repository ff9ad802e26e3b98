import Logging
import SyncBackend

/// The tree check: after every switch of server (`ServerSwitching`) and on `verify`, the tree
/// this mount applied is compared with the container it now talks to, and corrected.
///
/// - Compared cheaply first: the container's `TreeDigest` against the digest of the versions
///   applied here, at the same feed cursor (the follower makes the check once caught up; if
///   the container's digest stands for another cursor, the feed is read on and the check made
///   again, up to `TreeCheckRequests.settleAttempts` times).
/// - On a difference, the feed is read whole from the beginning (unchecked: an entry this mount
///   refuses still exists) and every entry that differs is asked for by ID: one the container
///   has never held is removed here and its queued change dropped (`removeUnvouched`: nothing a
///   lying server made up is uploaded); one it holds at another version, or holds while it is
///   missing here, is applied as the container has it (`forgetBase`, then the usual apply).
/// - Reported: the log (a warning when something differed), a `tree-corrected` event, and the
///   report to whoever waits (`verify`).
final class TreeChecker: Sendable {
    /// Checks wanted or awaited.
    let requests = TreeCheckRequests()
    private let container: BlockingContainer
    /// The container as it answers, unchecked, for the reading of the whole feed (an entry this
    /// mount refuses still exists in the container and is never taken as absent).
    private let uncheckedContainer: BlockingContainer
    private let remote: RemoteChanges
    private let applier: RemoteApplier
    private let refusals: RemoteEntryRefusals
    private let events: ChangeEvents
    private let run: EngineRun
    private let logger: Logger

    init(
        container: BlockingContainer, uncheckedContainer: BlockingContainer, remote: RemoteChanges,
        applier: RemoteApplier, refusals: RemoteEntryRefusals, events: ChangeEvents, run: EngineRun, logger: Logger
    ) {
        self.container = container
        self.uncheckedContainer = uncheckedContainer
        self.remote = remote
        self.applier = applier
        self.refusals = refusals
        self.events = events
        self.run = run
        self.logger = logger
    }

    /// Makes the wanted check, if any, with the follower caught up at `cursor`. Returns false
    /// when the container's digest stands for another cursor: the follower reads on first. A
    /// check that fails (the container does not answer, or is a server older than the digest)
    /// never stops the following: it is logged once and tried again at the next look at the feed.
    func checkIfRequested(at cursor: FeedCursor) -> Bool {
        guard let asked = requests.pending else { return true }
        do throws(SyncFailure) {
            let server = try container.treeDigest()
            if server.cursor != cursor, requests.noteUnsettled() < TreeCheckRequests.settleAttempts {
                return false
            }
            let applied = remote.appliedVersions()
            let local = TreeDigest(versions: applied.lazy.map { ($0.key, $0.value) }, cursor: cursor)
            var report = TreeCheckReport(entries: server.entries, matched: local.digest == server.digest)
            if !report.matched { try reconcileTree(applied: applied, server: server, into: &report) }
            publish(report)
            requests.finish(asked, report)
        } catch {
            if requests.fail(asked, error.description) == 1 {
                logger.warning(
                    "the tree could not be checked against the container: \(error); tried again at the next look")
            }
        }
        return true
    }

    /// `verify`: asks for a check and waits for its report (nil: none within `timeout`).
    /// `wake` ends the follower's wait on the feed, so it makes the check at once.
    func verify(timeout: Duration, wake: () -> Void) -> TreeCheckReport? {
        requests.requestAndWait(timeout: timeout, wake: wake)
    }

    /// Reads the container's feed whole and corrects every entry that differs (see the type).
    private func reconcileTree(
        applied: [FileID: EntryVersion], server: TreeDigest, into report: inout TreeCheckReport
    ) throws(SyncFailure) {
        var held: [FileID: RemoteEntry] = [:]
        var cursor = FeedCursor.beginning
        while run.isRunning {
            let batch = try uncheckedContainer.changes(after: cursor, limit: 1000)
            for entry in batch.entries { held[entry.id] = entry }
            cursor = batch.cursor
            guard batch.moreComing, !batch.entries.isEmpty else { break }
        }
        var differing: [FileID] = []
        for (id, entry) in held where id != .root {
            let here = applied[id]
            if entry.isDeleted ? here != nil : here != entry.version { differing.append(id) }
        }
        differing += applied.keys.filter { held[$0] == nil }
        let fed = TreeDigest(
            versions: held.values.lazy.filter { !$0.isDeleted }.map { ($0.id, $0.version) }, cursor: cursor)
        if differing.isEmpty, fed.cursor == server.cursor, fed.digest != server.digest {
            report.unresolved.append(
                "the server's change feed does not hold the tree its digest stands for: it may be lying "
                    + "(its feed was applied as it is)")
            return
        }
        // Deeper entries first: what a server made up inside a folder it made up goes before it.
        let paths = Dictionary(uniqueKeysWithValues: differing.map { ($0, remote.pathInTree($0)) })
        differing.sort { (paths[$0]??.count ?? 0) > (paths[$1]??.count ?? 0) }
        for id in differing where run.isRunning {
            try correct(id, path: paths[id] ?? nil, into: &report)
        }
    }

    /// Corrects one differing entry against the container's current version of it.
    private func correct(_ id: FileID, path: String?, into report: inout TreeCheckReport)
        throws(SyncFailure)
    {
        guard let current = try uncheckedContainer.entry(id) else {
            if let removed = remote.removeUnvouched(id) {
                report.removed.append(removed)
                logger.warning("removed \(removed): the container has never held it (\(id))")
            }
            return
        }
        // Applied meanwhile (the follower, or this mount's own commit).
        if !current.isDeleted, remote.baseVersion(of: id) == current.version, remote.pathInTree(id) != nil { return }
        let name = path ?? id.hex
        if let problem = RemoteEntryValidation.problem(with: current) {
            report.unresolved.append("\(name): refused by this mount (\(problem))")
            return
        }
        guard remote.forgetBase(of: id, unlessAt: current.version) else {
            report.unresolved.append("\(name): a local change of it is queued")
            return
        }
        guard try applier.apply(current, force: false) else {
            report.unresolved.append("\(name): cannot be applied yet")
            return
        }
        if current.isDeleted {
            guard remote.pathInTree(id) == nil, let path else { return }
            report.removed.append(path)
        } else if let now = remote.pathInTree(id) {
            report.restored.append(now)
        } else if !refusals.isRefused(id) {
            report.unresolved.append("\(name): cannot be applied yet")
        }
    }

    /// The log, and an event when the tree differed.
    private func publish(_ report: TreeCheckReport) {
        if report.matched {
            logger.info("\(report.summary)")
            return
        }
        logger.warning("\(report.summary)")
        events.publish(
            ChangeEvent(
                kind: .treeCorrected, path: "", origin: nil, fileID: nil, type: nil, message: report.summary))
    }
}
