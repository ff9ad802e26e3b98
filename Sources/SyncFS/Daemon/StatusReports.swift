import Foundation
import SyncBackend

extension SyncEngine {
    /// A test hook (`SYNCFS_TEST_CHECK_COUNTS` in the daemon's environment, doc/CLI.md): each
    /// `status` also walks the tree and stops the daemon if the counts it answers from differ.
    static let checksCounts = getenv("SYNCFS_TEST_CHECK_COUNTS") != nil

    /// What `syncfs-mount status` and `sync` show: built here, in the daemon, from the engine's
    /// `progress` and Core's values (the engine and Core know no status type).
    func status() -> SyncStatus {
        // Changes held as ignored are not waiting: `status` counts them apart (`ignored`).
        let items = fileSystem.outbox.activeItems
        let progress = self.progress
        let usage = fileSystem.residency.cacheUsage()
        if Self.checksCounts, let found = fileSystem.residency.countsDisagreement() {
            fatalError("status: the tree's counts differ from a walk's: \(found)")
        }
        // Files whose write failed are named with that reason, queued or not (`WriteFailures`).
        let writeFailed = fileSystem.fileIO.writeFailedFiles()
        let writeFailedIDs = Set(writeFailed.map { $0.id })
        var failing: [FailingEntry] = items.filter { $0.lastError != nil && !writeFailedIDs.contains($0.fileID) }.map {
            FailingEntry(
                fileID: $0.fileID.hex, path: fileSystem.displayPath(of: $0.fileID), reason: $0.lastError!,
                attempts: $0.attempts)
        }
        for failed in writeFailed {
            failing.append(
                FailingEntry(
                    fileID: failed.id.hex, path: fileSystem.displayPath(of: failed.id),
                    reason: WriteFailures.reason(failed.code),
                    attempts: items.first { $0.fileID == failed.id }?.attempts ?? 0))
        }
        var status = SyncStatus(
            pendingEntries: items.count, pendingBytes: uploads.pendingBytes(items.map(\.fileID)),
            failing: failing,
            lastContainerError: progress.lastFailure, bytesUploaded: progress.totals.plainBytesUploaded,
            encodedBytesUploaded: progress.totals.encodedBytesUploaded,
            bytesDownloaded: progress.totals.bytesDownloaded, online: progress.offlineSince == nil,
            feedCaughtUp: progress.feedCaughtUp, files: usage.files, cachedBytes: usage.localBytes,
            cacheBudget: options.cacheBudget,
            transfers: fileSystem.transfers.active.map { id, transfer in
                TransferStatus(
                    path: fileSystem.displayPath(of: id) ?? id.hex, direction: transfer.direction, done: transfer.done,
                    total: transfer.total)
            }.sorted { $0.path < $1.path }, conflicts: conflicts.unresolvedCount(),
            refusedRemoteEntries: refusals.all, rulesErrors: fileSystem.rulesWatch.errors)
        status.damagedCacheCopies = fileSystem.residency.cacheVerifier.damagedCopiesFound.load(ordering: .relaxed)
        status.offlineSince = progress.offlineSince.map { RFC3339.utc($0) }
        status.serverStorageUnavailableSince = progress.storageUnavailableSince.map { RFC3339.utc($0) }
        status.stateDiskFull = fileSystem.store.reserve.map(\.diskIsFull)
        status.changesWaiting = status.pendingEntries
        status.massDeleteGuard = guarded.status()
        status.ignored = ignoreStatus(listing: false)
        status.excluded = fileSystem.selectiveSync.excludedPaths()
        status.bandwidth = BandwidthStatus(limiter)
        pause.endIfDue()
        if accessKeeper.container != nil {
            let access = fileSystem.writeAccess
            status.access = AccessStatus(role: access.role, container: access.scope ?? "")
        }
        status.container = reporting?.report
        status.paused = pause.current.map {
            PauseStatus(until: $0.until.map { RFC3339.utc($0) }, all: $0.scope == .all)
        }
        // The condition `synced` events are published on (`SyncRounds`).
        status.upToDate = rounds.isUpToDateNow
        status.uploadBytesLeft = max(
            0, status.pendingBytes - status.transfers.filter { $0.direction == .upload }.reduce(0) { $0 + $1.done })
        return status
    }

    /// A `sync` request's answer: the status, but once nothing is queued the cache budget is
    /// checked first (evicting what the uploads left clean), so the `sync` that returns on this
    /// answer leaves the cache within its budget, as far as clean, closed, unpinned files allow.
    func syncAnswer() -> SyncStatus {
        let status = status()
        guard status.pendingEntries == 0, let budget = options.cacheBudget,
            fileSystem.residency.eviction.enforceBudget(budget) > 0
        else { return status }
        return self.status()
    }
}

/// The engine's state as the CLI reports it.
public struct SyncStatus: Codable, Sendable {
    public var pendingEntries: Int
    public var pendingBytes: Int64
    public var failing: [FailingEntry]
    public var lastContainerError: String?
    var bytesUploaded: Int64
    var encodedBytesUploaded: Int64
    var bytesDownloaded: Int64
    /// The container answers: no call failed as unreachable since the last answer.
    public var online: Bool
    /// When the current outage began (RFC 3339, UTC); nil while online.
    public var offlineSince: String?
    // The fields below are optional only so that a newer client can read an older daemon's
    // answer; a daemon always sets them.
    /// Online, but since then (RFC 3339, UTC) the server answers that the storage behind it (its
    /// database, chunk store or disk) is unavailable; nil otherwise (also from an older daemon).
    public var serverStorageUnavailableSince: String?
    /// Online, the feed applied and the queue empty: safe to close the laptop.
    public var upToDate: Bool?
    /// Local changes not yet committed by the container (= `pendingEntries`), failing or not.
    var changesWaiting: Int?
    /// Bytes of queued content still to upload: `pendingBytes` less what uploads in progress
    /// have already sent.
    public var uploadBytesLeft: Int64?
    /// The follower applied everything the container had at its last look.
    public var feedCaughtUp: Bool
    public var files: FileCounts
    /// Lengths of the files whose content is here.
    public var cachedBytes: Int64
    public var cacheBudget: Int64?
    public var transfers: [TransferStatus]
    /// Unresolved conflicts (conflict copies and files with conflict markers).
    public var conflicts: Int
    /// Remote entries this mount refused to apply (see `RemoteEntryValidation`).
    public var refusedRemoteEntries: [RefusedRemoteEntry]
    /// Rules files with an error now (`RulesWatch`).
    public var rulesErrors: [RulesFileError]
    /// The disk holding the state directory is full: the state database's reserve is in use
    /// (`SpaceReserve`) or less than 1 MiB is free. Nil from a daemon without a reserve.
    public var stateDiskFull: Bool?
    /// Cached copies found damaged (not matching their chunk hashes) since the mount: discarded,
    /// downloaded again when read (doc/SEMANTICS.md, "Damaged cached content").
    public var damagedCacheCopies: Int?
    /// The mass-delete guard (doc/SEMANTICS.md, "Mass-delete guard"); nil from an older daemon.
    public var massDeleteGuard: GuardStatus?
    /// This mount's advisory locks (doc/SEMANTICS.md, "Locks"); nil from an older daemon.
    public var locks: MountLockCounts?
    /// Changes held as ignored, and (`status --ignored`) the ignored paths; nil from an older
    /// daemon.
    public var ignored: IgnoreStatus?
    /// Folders excluded from this device (selective sync), by their current paths; nil from an
    /// older daemon.
    public var excluded: [String]?
    /// The bandwidth limits in force (doc/SEMANTICS.md, "Bandwidth limits"); nil from an older daemon.
    public var bandwidth: BandwidthStatus?
    /// The mount is paused (doc/SEMANTICS.md, "Pausing a mount"); nil when it is not.
    public var paused: PauseStatus?
    /// The role the container grants this mount (doc/SEMANTICS.md, "A viewer's mount"); nil for
    /// a container that grants no roles (a local one) and from an older daemon.
    public var access: AccessStatus?
    /// What an end-to-end encrypted container reports (doc/CRYPTO.md): how it is encrypted and
    /// any alarm; nil for a plain container and from an older daemon.
    public var container: ContainerReport?
}

/// What the container lets this mount do, for `status`.
public struct AccessStatus: Codable, Sendable {
    /// `viewer`: the mount is read-only by itself and uploads nothing; `editor`, `admin`: writable.
    public var role: AccessRole
    /// The container's name where the role holds (the server's name for it).
    public var container: String
}

/// A paused mount, for `status`.
public struct PauseStatus: Codable, Sendable {
    /// When the pause ends by itself (RFC 3339, UTC); nil: only `resume` ends it.
    public var until: String?
    /// Downloads are paused too (`pause --all`).
    public var all: Bool
}

public struct FailingEntry: Codable, Sendable {
    public var fileID: String
    public var path: String?
    public var reason: String
    public var attempts: Int
}

extension PathStatus {
    /// The `status PATH` answer for Core's state of the entry.
    init(_ entry: EntryStatus) {
        let kind: String
        switch entry.kind {
        case .file: kind = "file"
        case .directory: kind = "directory"
        case .symlink: kind = "symlink"
        }
        self.init(
            path: entry.path, kind: kind, state: entry.state, pinned: entry.pinned, size: entry.size,
            localBytes: entry.localBytes, progress: entry.progress.map { Progress(done: $0.done, total: $0.total) },
            error: entry.error, files: entry.files, totalBytes: entry.totalBytes)
    }
}
