/// The lifecycle of one file's content, as one pure state machine: where the bytes are
/// (`Residency`) × what the container lacks of them (`Modification`), the events that move a file
/// between states, and the actions the caller must carry out. No locks, no I/O: the caller feeds
/// events under its own lock and performs the actions (`ContentLifecycleTests` checks every
/// (state, event) pair; doc/SEMANTICS.md, "The content state machine", has the states).
///
/// Each node holds its state (`Node+Content.swift`: the residency, the writes not yet recorded,
/// whether the uploader holds it taken, and a write failure, packed in one atomic word as `Held`);
/// the outbox holds the rest of the modification (a queued change, `Outbox.isPending`). Every
/// path that changes the held part feeds the node an event (`Node.apply`), which runs
/// `transition(from:on:)` on the whole state and keeps the result; the caller carries out the
/// actions. Who feeds what:
/// - the file system: `openedForWriting`, `openedTruncating`, `written` (its lock-free share,
///   `Node.noteContentWritten`), `writeFailed`, `recorded`;
/// - the residency: `hydrationStarted`, `hydrationFinished`, `hydrationFailed`, `evict`,
///   `cachedCopyDamaged`; the mount's cache check: `cacheFileMissing`, `cacheFileShort`,
///   `cacheFileLonger` (also before an upload reads the cache file);
/// - the uploader (`UploadRecords`): `uploadTaken` (its `.upload(permit)` is what it may send),
///   `uploadCommitted`, and `uploadRefused` when an upload ends without a commit (postponed,
///   failed, busy, parked, waiting for a merge or for others); `mergeAdopted(WhileHeld)` when a
///   merge is adopted (`Conflicts.adoptMerged`).
/// The follower's content replacement (`RemoteChanges.update`) still decides with its own checks
/// (`plan`'s `.localChangesPending`); the table's `remoteContentChanged` rows describe it.
///
/// Where an earlier behaviour was unsafe
/// (a file whose write failed was uploaded with the bytes it never got; a queued edit whose cache
/// file vanished or was truncated was uploaded as an empty or short file), the machine gives the
/// safe answer and its transition says so.
///
/// Two states can never upload, by construction: `Residency.lost` (the cache file of a modified
/// file vanished or is short: the container's version is kept) and `Modification.writeFailed`
/// (a write failed, the program was told, the file holds bytes nobody vouches for). The uploader
/// needs an `UploadPermit`, and only `State.uploadPermit` (and the `uploadTaken` transition,
/// which uses it) makes one, never from those states.
///
/// Open handles, pins and the eviction guards that are not about content (open, pinned, base
/// size) stay with the caller: an event is fed once the caller decided it happens (e.g. `evict`
/// means "eviction was asked for a closed, unpinned file").
enum ContentLifecycle {
    /// Where the file's bytes are.
    enum Residency: String, CaseIterable, Sendable {
        /// Only in the container (a placeholder): the cache file is absent or holds part of an
        /// earlier, interrupted download.
        case placeholder
        /// A download into the cache file is running (`Node.hydration`, not ended).
        case hydrating
        /// Every byte is in the cache file (`Node.contentIsLocal`).
        case local
        /// The cache file of a modified file vanished or is shorter than recorded: the local edit
        /// is gone and the container's version must be kept. Never uploads.
        case lost
    }

    /// What the container lacks of the file (its content or its metadata).
    enum Modification: String, CaseIterable, Sendable {
        /// In sync with the base: nothing queued.
        case clean
        /// Local changes not yet uploaded: written and not yet recorded
        /// (`Node.hasUnrecordedWrites`), or queued (`Outbox.isPending`).
        case dirty
        /// Taken by the uploader (`prepareUpload` returned `.put`) and unchanged since.
        case uploading
        /// A write into the cache file failed (ENOSPC, EDQUOT, EIO): the program was told, and the
        /// file may hold bytes it never wrote (holes where the write failed). Never uploads.
        case writeFailed
    }

    struct State: Hashable, Sendable, CustomStringConvertible {
        var residency: Residency
        var modification: Modification

        init(_ residency: Residency, _ modification: Modification) {
            self.residency = residency
            self.modification = modification
        }

        var description: String { "\(residency.rawValue)/\(modification.rawValue)" }

        /// Whether the state can occur. A placeholder or a running download has no bytes of its
        /// own to fail writing; a lost file is always a modified one (a clean file whose cache
        /// file went becomes a placeholder again) and is neither uploading nor failed-writing.
        var isReachable: Bool {
            switch (residency, modification) {
            case (.placeholder, .writeFailed), (.hydrating, .writeFailed): return false
            case (.lost, .dirty): return true
            case (.lost, _): return false
            default: return true
            }
        }

        /// The state from its parts (the mapping `Held.state` uses): a download running, a
        /// placeholder, local changes (an outbox row or writes not yet recorded); `uploading` for
        /// local changes taken by the uploader and unchanged since (`Held.isTakenForUpload`);
        /// `lost` (always modified); `writeFailed` on local content (`WriteFailures`).
        init(
            downloadRunning: Bool, isPlaceholder: Bool, hasLocalChanges: Bool, uploadInFlight: Bool = false,
            contentLost: Bool = false, writeFailed: Bool = false
        ) {
            residency = downloadRunning ? .hydrating : isPlaceholder ? .placeholder : contentLost ? .lost : .local
            modification = !hasLocalChanges ? .clean : uploadInFlight ? .uploading : .dirty
            if residency == .lost { modification = .dirty }
            if residency == .local && writeFailed { modification = .writeFailed }
        }

        /// Every reachable state, in table order.
        static let reachable: [State] = Residency.allCases.flatMap { residency in
            Modification.allCases.map { State(residency, $0) }
        }.filter(\.isReachable)

        /// What an upload that starts now may send, or nil: nothing to send (clean, already
        /// taken) or nothing that may be sent (`lost`, `writeFailed`). The only way to make an
        /// `UploadPermit`; the daemon gets one only from the `uploadTaken` transition's
        /// `.upload(permit)` action.
        var uploadPermit: UploadPermit? {
            guard modification == .dirty else { return nil }
            switch residency {
            case .placeholder, .hydrating: return UploadPermit(content: .knownManifest)
            case .local: return UploadPermit(content: .cacheFile)
            case .lost: return nil
            }
        }
    }

    /// The event a look at the cache file gives (at mount, or before an upload reads it): its
    /// size on disk (nil: missing) against the size recorded for the node. Nil when they agree.
    /// Only meaningful for `local` content (a placeholder's cache file is absent or partial).
    static func cacheFileCheck(recorded: Int64, onDisk: Int64?) -> Event? {
        guard let onDisk else { return .cacheFileMissing }
        if onDisk < recorded { return .cacheFileShort }
        if onDisk > recorded { return .cacheFileLonger }
        return nil
    }

    /// What the uploader may send for a file; made only from a state that may upload.
    struct UploadPermit: Hashable, Sendable {
        enum Content: Hashable, Sendable {
            /// The cache file's bytes (read under the seqlock, `ContentSnapshot`).
            case cacheFile
            /// No bytes of its own (a placeholder): metadata only, with the manifest it stands for
            /// (`Node.retiredManifest` or the base's).
            case knownManifest
        }
        let content: Content

        fileprivate init(content: Content) { self.content = content }
    }

    /// What happened to the file.
    enum Event: Hashable, Sendable, CaseIterable {
        /// A program opened it for writing without `O_TRUNC` (`open`, `create` of an existing
        /// file), or `truncate` to a non-zero length (`prepareForWriting`).
        case openedForWriting
        /// Opened with `O_TRUNC`, or truncated to 0: the old bytes are discarded.
        case openedTruncating
        /// Bytes went into the cache file (`write`, a splice, `fallocate`: `Node.noteWrite`).
        case written
        /// A write into the cache file failed (ENOSPC, EDQUOT, EIO), possibly after some bytes.
        case writeFailed
        /// The node's record was handed to the store with an outbox row (`recordLocalChange`: on
        /// close, `fsync`, and on every metadata change that syncs).
        case recorded
        /// The uploader took the queued item (`prepareUpload`, in every round of its upload).
        case uploadTaken
        /// The container committed what was taken (`uploadCommitted`).
        case uploadCommitted
        /// The upload ended without a commit (`uploadReturned`: failed, postponed, busy, parked,
        /// waiting): it stays queued.
        case uploadRefused
        /// The container's content changed and no one in the kernel holds the inode
        /// (`applyRemote` → `update`).
        case remoteContentChanged
        /// The container's content changed while the kernel holds the inode (open handles or a
        /// cached lookup: `update` → `replaceInode`).
        case remoteContentChangedWhileHeld
        /// A merge was adopted for the file taken for upload (`adoptMerged` → `update`): its
        /// content became the merged file (or the container's), it stays queued on top of the
        /// container's version. No one in the kernel holds the inode.
        case mergeAdopted
        /// The same while the kernel holds the inode (`update` → `replaceInode`).
        case mergeAdoptedWhileHeld
        /// A download was asked for: a read of a missing range, a pin, `download`
        /// (`hydrationLocked`).
        case hydrationStarted
        /// The download has every chunk and is synced (`runHydration`, complete).
        case hydrationFinished
        /// The download failed or was cancelled (`runHydration`, incomplete).
        case hydrationFailed
        /// Eviction of a closed, unpinned file was asked for (`evictLocked`, `enforceBudget`).
        case evict
        /// The cache file is missing (at mount: `reconcileCache`; before an upload).
        case cacheFileMissing
        /// The cache file is shorter than the recorded size (at mount; before an upload).
        case cacheFileShort
        /// The cache file is longer than recorded at mount: writes a crash kept from being
        /// recorded (`reconcileCache`).
        case cacheFileLonger
        /// A clean cached copy failed the check against its manifest's hashes on its first read
        /// after the mount (`discardDamagedCopy`): it is discarded, the container has the file.
        case cachedCopyDamaged
    }

    /// What the caller must do after a transition (in order).
    enum Action: Hashable, Sendable {
        /// Start the file's download, or join the one running (`hydrationLocked`).
        case hydrate
        /// Stop the running download (`cancelHydration`).
        case cancelHydration
        /// Empty (or create) the cache file (`makeLocalWithoutContent`, `openHandle` with
        /// `O_TRUNC`).
        case emptyCacheFile
        /// Queue (or re-queue) the entry for upload (`Outbox.changed`).
        case queueUpload
        /// Hand the uploader this permit.
        case upload(UploadPermit)
        /// The uploader gets nothing: the queued change is kept, shown as `error`, and the
        /// container's version stays.
        case refuseUpload
        /// The queued item waits its backoff (`Outbox.failed`, `postpone`).
        case retryUpload
        /// The remote change is not applied: the local change goes first (`plan` →
        /// `.localChangesPending`) or, for `lost`/`writeFailed`, waits until the failure is dealt
        /// with.
        case deferRemoteChange
        /// Install the downloaded content as the cache file (`ContentCache.install`).
        case replaceCacheFile
        /// Give the name and identity to a new inode; the old one keeps the old content (and
        /// a placeholder's manifest, `retiredManifest`) for its open handles (`replaceInode`).
        case keepOldContentForOpenHandles
        /// Drop the kernel's cached pages and attributes of the inode.
        case invalidateKernelCache
        /// Remove the cache file (or a placeholder's partial download).
        case dropCacheFile
        /// Hand the store the node's new residency without queueing (`recordChange`).
        case recordResidency
        /// The local edit is gone: log it, name it in `status`, keep the container's version.
        case markLost
        /// Log and name in `status` the file that could not be saved.
        case reportWriteFailure
        /// Eviction refused (changes not yet uploaded, being downloaded, lost).
        case refuseEviction
        /// Readers waiting for the download get its error (`Hydration.fail`).
        case failWaitingReaders
        /// The request fails with EIO: there are no bytes to give (a read or a write-open of a
        /// lost file).
        case failWithIOError
    }

    /// A transition's result. `diagnostic` is set for a pair that cannot happen (the state is
    /// then unchanged and there are no actions): the caller logs it as a bug.
    struct Transition: Hashable, Sendable {
        var state: State
        var actions: [Action]
        var diagnostic: String?

        static func to(_ state: State, _ actions: Action...) -> Transition {
            Transition(state: state, actions: actions, diagnostic: nil)
        }
    }

    /// The state after `event` in `state`, and what to do.
    static func transition(from state: State, on event: Event) -> Transition {
        guard state.isReachable else { return impossible(state, event, "\(state) is not a reachable state") }
        switch event {
        case .openedForWriting: return openedForWriting(state)
        case .openedTruncating: return openedTruncating(state)
        case .written: return written(state)
        case .writeFailed: return writeFailed(state)
        case .recorded: return recorded(state)
        case .uploadTaken: return uploadTaken(state)
        case .uploadCommitted: return uploadCommitted(state)
        case .uploadRefused: return uploadRefused(state)
        case .remoteContentChanged: return remoteContentChanged(state, held: false)
        case .remoteContentChangedWhileHeld: return remoteContentChanged(state, held: true)
        case .mergeAdopted: return mergeAdopted(state, held: false)
        case .mergeAdoptedWhileHeld: return mergeAdopted(state, held: true)
        case .hydrationStarted: return hydrationStarted(state)
        case .hydrationFinished: return hydrationFinished(state)
        case .hydrationFailed: return hydrationFailed(state)
        case .evict: return evict(state)
        case .cacheFileMissing, .cacheFileShort: return cacheFileDamaged(state, missing: event == .cacheFileMissing)
        case .cacheFileLonger: return cacheFileLonger(state)
        case .cachedCopyDamaged: return cachedCopyDamaged(state)
        }
    }

    static func impossible(_ state: State, _ event: Event, _ why: String) -> Transition {
        Transition(state: state, actions: [], diagnostic: "\(event) in \(state): \(why)")
    }
}
