import Glibc
import Logging
import SyncBackend

/// Applies one remote entry to the folder: the remote-apply pipeline, each stage named here.
///
/// 1. **plan** (`RemoteChanges.planRemote`): against the local state — skip, refuse, later
///    (a local change waits to upload), a missing parent first, or apply (with a download?).
/// 2. **parent** (`applyParent`): a parent the folder lacks is asked for and applied first
///    (forced with the child), at most 64 deep; a cycle of parents is refused.
/// 3. **fetch** (`fetchContent`): changed content is downloaded into a complete, synced
///    temporary file next to the cache (reusing chunks of the local content).
/// 4. **apply** (`RemoteChanges.applyRemote`): in one tree transaction the plan is made again,
///    the node created, updated, moved or removed, the content file installed, the new sync
///    base recorded and the change events published;
/// 5. **echo**, with the inotify echo on: creates, deletes and moves are made through the mount
///    point, content and attribute changes touched, so inotify watchers see them
///    (`RemoteEcho`);
/// 6. **invalidate**: the kernel's caches of what changed are dropped after the transaction.
/// 7. **record**: the follower stores its cursor behind the batch (`Follower`).
///
/// Used by the follower, by the uploader when the local side gives way (`RemoteWins`), by a
/// merge that brings a folder back, and by the tree check.
final class RemoteApplier: Sendable {
    private let remote: RemoteChanges
    private let uploads: UploadRecords
    private let container: BlockingContainer
    private let transfer: ContentTransfer
    private let refusals: RemoteEntryRefusals
    private let progress: EngineProgress
    private let contentActivity: ContentActivity
    private let logger: Logger

    init(
        remote: RemoteChanges, uploads: UploadRecords, container: BlockingContainer, transfer: ContentTransfer,
        refusals: RemoteEntryRefusals, progress: EngineProgress, contentActivity: ContentActivity, logger: Logger
    ) {
        self.remote = remote
        self.uploads = uploads
        self.container = container
        self.transfer = transfer
        self.refusals = refusals
        self.progress = progress
        self.contentActivity = contentActivity
        self.logger = logger
    }

    /// Applies `entry` (see the type). Returns false if it must be retried later. `force`: the
    /// local side gave way (its changes lose); `giving`: the queued change that gives way.
    /// `children` are the entries waiting for this one as their missing parent.
    func apply(
        _ entry: RemoteEntry, force: Bool, giving item: OutboxItem? = nil, depth: Int = 0, children: Set<FileID> = []
    ) throws(SyncFailure) -> Bool {
        for _ in 0..<3 {
            switch remote.planRemote(entry, force: force) {
            case .skip, .localChangesPending:
                return true
            case .refused(let reason):
                refuse(entry, reason)
                return true
            case .later:
                return false
            case .needsParent(let parentID):
                switch try applyParent(parentID, of: entry, force: force, depth: depth, children: children) {
                case .applied: continue
                case .refused: return true
                case .later: return false
                }
            case .apply(let needsContent):
                let contentFile = needsContent ? try fetchContent(entry) : nil
                let outcome = remote.applyRemote(entry, contentFile: contentFile, force: force, giving: item)
                if let contentFile {
                    contentActivity.note()
                    // An installed content file was renamed away; one the change no longer needed
                    // (the file became a placeholder meanwhile) is removed here.
                    unlink(contentFile)
                }
                switch outcome {
                case .apply(let needed):
                    // The file became local meanwhile: plan again, with a download this time.
                    if needed && contentFile == nil { continue }
                    return true
                case .skip, .localChangesPending: return true
                case .refused(let reason):
                    refuse(entry, reason)
                    return true
                case .later: return false
                case .needsParent: continue
                }
            }
        }
        return false
    }

    private enum ParentOutcome { case applied, refused, later }

    /// Stage 2: the missing parent `parentID` of `entry` is applied first. A child of a refused
    /// parent is refused too: waiting for the parent would keep it deferred, and the follower
    /// polling for it, for as long as the container lies.
    private func applyParent(
        _ parentID: FileID, of entry: RemoteEntry, force: Bool, depth: Int, children: Set<FileID>
    ) throws(SyncFailure) -> ParentOutcome {
        guard depth < 64 else { return .later }
        guard !children.contains(parentID) else {
            refuse(entry, "its parents form a cycle (\(parentID) is below it)")
            return .refused
        }
        let parent = try container.entry(parentID)
        guard !refusals.isRefused(parentID) else {
            refuse(entry, "its parent \(parentID) was refused")
            return .refused
        }
        guard let parent, !parent.isDeleted else { return .later }
        // A forced change forces its missing ancestors too (their local deletes lose).
        guard try apply(parent, force: force, depth: depth + 1, children: children.union([entry.id])) else {
            return .later
        }
        if refusals.isRefused(parentID) {
            refuse(entry, "its parent \(parentID) was refused")
            return .refused
        }
        return .applied
    }

    /// Stage 3: downloads the content of `entry` into a new temporary file, reusing chunks of
    /// the local content of its sync base.
    private func fetchContent(_ entry: RemoteEntry) throws(SyncFailure) -> String {
        let path = remote.temporaryContentPath()
        let base = uploads.syncBase(of: entry.id)
        var totals = ContentTransfer.Totals()
        defer { progress.add(totals) }
        do {
            try transfer.download(
                entry.state.manifest, to: path, local: remote.reusableContentPath(entry.id),
                localManifest: base?.manifest ?? [], totals: &totals)
        } catch {
            unlink(path)
            throw error
        }
        return path
    }

    /// Records a remote entry Core refused (logged once per entry, listed by `status`).
    func refuse(_ entry: RemoteEntry, _ reason: String) {
        refusals.refuse(entry, because: reason, logger: logger)
    }
}
