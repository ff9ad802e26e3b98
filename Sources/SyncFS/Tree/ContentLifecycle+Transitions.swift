/// The transitions of `ContentLifecycle`, one function per event. Each says which function's
/// behaviour it carries out, and where the safe answer differs from what the flags once did.
extension ContentLifecycle {
    /// Mirrors `placeholderNeedingContent` + `openingWithDownloads` (and `prepareForWriting` for
    /// a non-zero truncate): a placeholder is downloaded whole before the open goes ahead; a local
    /// file opens as it is.
    ///
    /// Safe answer (new): a `lost` file cannot be opened for writing without `O_TRUNC` (EIO) — its
    /// bytes are gone, and writing into the remains would make them look vouched for. Today the
    /// mount sweep made it an empty local file and writes went on top.
    static func openedForWriting(_ state: State) -> Transition {
        switch state.residency {
        case .placeholder: return .to(State(.hydrating, state.modification), .hydrate)
        case .hydrating: return .to(state, .hydrate)
        case .local: return .to(state)
        case .lost: return .to(state, .failWithIOError)
        }
    }

    /// Mirrors `makeLocalWithoutContent` (a placeholder: the download stops, the cache file is
    /// emptied) and `openHandle` with `O_TRUNC` (a local file is emptied and the change recorded
    /// and queued). An upload in progress is superseded (the seqlock makes it postpone).
    ///
    /// Safe answer (new): `O_TRUNC` is also the way out of `writeFailed` and `lost`: every byte
    /// the file holds afterwards is one a program wrote, so it may upload again.
    static func openedTruncating(_ state: State) -> Transition {
        let dirty = State(.local, .dirty)
        switch state.residency {
        case .placeholder: return .to(dirty, .emptyCacheFile, .queueUpload)
        case .hydrating: return .to(dirty, .cancelHydration, .emptyCacheFile, .queueUpload)
        case .local, .lost: return .to(dirty, .emptyCacheFile, .queueUpload)
        }
    }

    /// Mirrors `Node.noteWrite` (lock-free: only `hasUnrecordedWrites`; the queueing comes with
    /// `recorded`). A write during an upload makes the upload stale (`contentUnchanged` fails).
    /// Writes need local content: never to a placeholder or during a download.
    ///
    /// Safe answer (new): a successful write after a failed one does not make the file whole
    /// (`writeFailed` stays). A handle opened before the cache file was lost still writes into the
    /// old inode; the file stays `lost`.
    static func written(_ state: State) -> Transition {
        switch (state.residency, state.modification) {
        case (.placeholder, _), (.hydrating, _):
            return impossible(state, .written, "writes wait for the whole content (prepareForWriting)")
        case (.local, .writeFailed), (.lost, _): return .to(state)
        case (.local, _): return .to(State(.local, .dirty))
        }
    }

    /// Mirrors `OpenFileIO.noteWriteFailed` (a `pwrite` or splice into the cache file failed
    /// with ENOSPC, EDQUOT or EIO, or the state database's reserve refused it): the file becomes
    /// `writeFailed` — shown as `error`, never uploaded, named in `status` and the log, kept in
    /// the `write_failures` fact — until it is truncated (`openedTruncating`) or removed. Before
    /// a failed write was uploaded with zeros where it failed.
    static func writeFailed(_ state: State) -> Transition {
        switch state.residency {
        case .placeholder, .hydrating:
            return impossible(state, .writeFailed, "writes wait for the whole content (prepareForWriting)")
        case .local:
            if state.modification == .writeFailed { return .to(state) }
            return .to(State(.local, .writeFailed), .reportWriteFailure)
        case .lost: return .to(state)
        }
    }

    /// Mirrors `recordLocalChange`: the record and an outbox row in one batch. A placeholder's
    /// change is metadata only (its content cannot change without a download). During an upload
    /// the row's generation moves on, so the upload's success keeps the item (`Outbox.succeeded`).
    ///
    /// Safe answer (new): nothing is queued for `writeFailed` or `lost` (they never upload). The
    /// daemon keeps their outbox row all the same, so `status` and `sync` count them as changes
    /// not yet in the container; the uploader's refusal (`uploadTaken`) is what keeps them there.
    static func recorded(_ state: State) -> Transition {
        if state.residency == .lost || state.modification == .writeFailed { return .to(state) }
        return .to(State(state.residency, .dirty), .queueUpload)
    }

    /// Mirrors `prepareUpload` returning `.put`: a placeholder (or a file still downloading:
    /// `isPlaceholder` is true until the download is recorded) sends its metadata with the
    /// manifest it stands for; a local file sends its cache file. A file still `uploading` is
    /// taken again by the next round of the same upload (a commit to retry on a new base, a
    /// parent that went first): the queue never hands out an item in flight, the upload holding
    /// it reads it anew.
    ///
    /// Safe answer (new): `lost` and `writeFailed` get `refuseUpload` (today they uploaded an empty,
    /// short or zero-filled file over the container's good version).
    static func uploadTaken(_ state: State) -> Transition {
        let queued = state.modification == .uploading ? State(state.residency, .dirty) : state
        if let permit = queued.uploadPermit {
            return .to(State(state.residency, .uploading), .upload(permit))
        }
        switch (state.residency, state.modification) {
        case (.lost, _), (_, .writeFailed): return .to(state, .refuseUpload)
        default: return impossible(state, .uploadTaken, "nothing is queued")
        }
    }

    /// Mirrors `uploadCommitted`: the base is recorded; the item goes only if nothing changed
    /// since it was taken (`Outbox.succeeded`), else the file stays `dirty`. A commit can still
    /// arrive after a write failed or the cache file was lost (it carries what was read before,
    /// checked unchanged): the failure stands.
    static func uploadCommitted(_ state: State) -> Transition {
        switch state.modification {
        case .uploading: return .to(State(state.residency, .clean))
        case .dirty, .writeFailed: return .to(state)
        case .clean: return impossible(state, .uploadCommitted, "nothing was taken")
        }
    }

    /// Mirrors an upload that ends without a commit (`uploadReturned`, after `uploadFailed` or
    /// `Outbox.postpone`): the item stays queued and waits.
    static func uploadRefused(_ state: State) -> Transition {
        switch state.modification {
        case .uploading: return .to(State(state.residency, .dirty), .retryUpload)
        case .dirty:
            // Changed while in flight (or lost meanwhile): the item is still queued.
            return .to(state, .retryUpload)
        case .writeFailed: return .to(state)
        case .clean: return impossible(state, .uploadRefused, "nothing was taken")
        }
    }

    /// Mirrors `plan` and `update` / `replaceInode`. A file with local changes is not touched
    /// (`.localChangesPending`: the upload resolves it). Not held by the kernel: a placeholder's
    /// partial download is dropped; a local file's cache file is replaced by the downloaded
    /// content. Held: the name moves to a new inode with the new content (a placeholder, if the
    /// old one was one or was downloading); the old inode keeps the old content for its handles.
    ///
    /// Safe answer (new): `lost` and `writeFailed` defer the remote change like any local change;
    /// they never upload, so it waits until the failure is dealt with (`O_TRUNC`, or recovery).
    static func remoteContentChanged(_ state: State, held: Bool) -> Transition {
        let event: Event = held ? .remoteContentChangedWhileHeld : .remoteContentChanged
        guard state.modification == .clean else { return .to(state, .deferRemoteChange) }
        switch (state.residency, held) {
        case (.placeholder, false): return .to(state, .dropCacheFile, .invalidateKernelCache)
        case (.hydrating, false):
            return .to(State(.placeholder, .clean), .cancelHydration, .dropCacheFile, .invalidateKernelCache)
        case (.local, false): return .to(state, .replaceCacheFile, .invalidateKernelCache)
        case (.placeholder, true), (.hydrating, true):
            return .to(State(.placeholder, .clean), .keepOldContentForOpenHandles, .invalidateKernelCache)
        case (.local, true):
            return .to(state, .replaceCacheFile, .keepOldContentForOpenHandles, .invalidateKernelCache)
        case (.lost, _): return impossible(state, event, "a lost file is always modified")
        }
    }

    /// Mirrors `adoptMerged`: only an entry unchanged since its item was taken (`uploading`) adopts
    /// a merge; the content is replaced like a remote change's (`update`), and the entry stays
    /// queued (`dirty`) to be committed on top of the container's version. A placeholder (only
    /// metadata was queued) takes the container's content, so its partial download goes. An
    /// entry changed since, or whose write failed or content was lost, refuses the merge
    /// (`adoptableNode`, `contentUnchanged`): unchanged, no action; the next upload decides.
    static func mergeAdopted(_ state: State, held: Bool) -> Transition {
        let event: Event = held ? .mergeAdoptedWhileHeld : .mergeAdopted
        switch (state.residency, state.modification) {
        case (_, .clean): return impossible(state, event, "nothing was taken")
        case (_, .dirty), (_, .writeFailed): return .to(state)
        case (.placeholder, .uploading), (.hydrating, .uploading):
            if held {
                return .to(State(.placeholder, .dirty), .keepOldContentForOpenHandles, .invalidateKernelCache)
            }
            if state.residency == .hydrating {
                return .to(State(.placeholder, .dirty), .cancelHydration, .dropCacheFile, .invalidateKernelCache)
            }
            return .to(State(.placeholder, .dirty), .dropCacheFile, .invalidateKernelCache)
        case (.local, .uploading):
            if held {
                return .to(
                    State(.local, .dirty), .replaceCacheFile, .keepOldContentForOpenHandles, .invalidateKernelCache)
            }
            return .to(State(.local, .dirty), .replaceCacheFile, .invalidateKernelCache)
        case (.lost, .uploading): return impossible(state, event, "a lost file is never taken for upload")
        }
    }

    /// Mirrors `hydrationLocked`: starts the download of a placeholder, or returns the running
    /// one; a local file needs none (`ensureContent` returns at once).
    ///
    /// Safe answer (new): a `lost` file has no download to make (its edit is gone; the base is not
    /// what it holds): the read fails with EIO.
    static func hydrationStarted(_ state: State) -> Transition {
        switch state.residency {
        case .placeholder: return .to(State(.hydrating, state.modification), .hydrate)
        case .hydrating: return .to(state, .hydrate)
        case .local: return .to(state)
        case .lost: return .to(state, .failWithIOError)
        }
    }

    /// Mirrors `runHydration` when complete: the node becomes local and the change is recorded
    /// without queueing (`recordChange`); queued metadata changes stay queued. A driver whose
    /// download was cancelled meanwhile (`node.hydration !== hydration`) changes nothing.
    static func hydrationFinished(_ state: State) -> Transition {
        guard state.residency == .hydrating else { return .to(state) }
        return .to(State(.local, state.modification), .recordResidency)
    }

    /// Mirrors `runHydration` when incomplete (`Hydration.fail`, `cancel`): readers get the error,
    /// the node stays a placeholder (what was fetched stays on disk for a later download).
    static func hydrationFailed(_ state: State) -> Transition {
        guard state.residency == .hydrating else { return .to(state) }
        return .to(State(.placeholder, state.modification), .failWaitingReaders)
    }

    /// Mirrors `evictLocked`: a placeholder frees an earlier partial download (`.alreadyOnline`);
    /// a running download is refused; a clean local file records the placeholder state, then its
    /// cache file goes and the kernel's pages are dropped; anything not yet uploaded is refused.
    static func evict(_ state: State) -> Transition {
        switch (state.residency, state.modification) {
        case (.placeholder, _): return .to(state, .dropCacheFile)
        case (.local, .clean):
            return .to(State(.placeholder, .clean), .recordResidency, .dropCacheFile, .invalidateKernelCache)
        case (.hydrating, _), (.local, _), (.lost, _): return .to(state, .refuseEviction)
        }
    }

    /// Mirrors `reconcileCache` at mount for a missing cache file: a clean, synced file becomes a
    /// placeholder again. A placeholder's cache file is allowed to be absent or partial.
    ///
    /// Safe answers (new): a modified file whose cache file is missing or short becomes `lost`
    /// (today: an empty file — uploaded if its change was queued — or a short one queued as a
    /// local change). A clean file whose cache file is short becomes a
    /// placeholder like a missing one (today the short file was queued as a local change and
    /// replaced the container's good version).
    static func cacheFileDamaged(_ state: State, missing: Bool) -> Transition {
        switch (state.residency, state.modification) {
        case (.placeholder, _), (.hydrating, _), (.lost, _): return .to(state)
        case (.local, .clean):
            if missing { return .to(State(.placeholder, .clean), .recordResidency) }
            return .to(State(.placeholder, .clean), .recordResidency, .dropCacheFile)
        case (.local, _): return .to(State(.lost, .dirty), .markLost)
        }
    }

    /// Mirrors `reconcileCache` at mount for a cache file longer than recorded: writes a crash
    /// kept from being recorded are local changes (the size is taken, the change queued).
    static func cacheFileLonger(_ state: State) -> Transition {
        switch (state.residency, state.modification) {
        case (.placeholder, _), (.hydrating, _): return .to(state)
        case (.local, .writeFailed), (.lost, _): return .to(state)
        case (.local, .uploading):
            return impossible(state, .cacheFileLonger, "nothing uploads while the mount starts")
        case (.local, _): return .to(State(.local, .dirty), .queueUpload)
        }
    }

    /// Mirrors `discardDamagedCopy`: only a clean local copy is checked (`cachedContentToVerify`);
    /// a damaged one becomes a placeholder, recorded (so a crash keeps it one). The cache file
    /// stays for the download that follows, which fetches only the chunks that fail their hash.
    static func cachedCopyDamaged(_ state: State) -> Transition {
        guard state == State(.local, .clean) else {
            return impossible(state, .cachedCopyDamaged, "only a clean local copy is checked against its manifest")
        }
        return .to(State(.placeholder, .clean), .recordResidency)
    }
}
