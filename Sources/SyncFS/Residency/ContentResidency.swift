import Logging
import SyncBackend
import Synchronization

/// Where each file's content lives on this machine, and getting it here: placeholders downloaded
/// when read (hydration), pins kept downloaded, clean files evicted to keep the cache within its
/// budget, and the visible state of each entry (`user.syncfs.state`, `status PATH`).
///
/// Holds the tree (`LiveTree`) and the cache; the kernel's operations (`SyncFileSystem`) call it
/// to open placeholders for reading or writing, the sync engine to download pinned files and
/// keep the budget, the daemon for status. The downloads themselves run in `Hydrations`, the
/// checks of cached copies in `CacheVerifier`, evictions and the budget in `Eviction`; the rest
/// is grouped by concern in `ContentResidency+*.swift`.
final class ContentResidency: Sendable, HoldsTheTree {
    let parts: FolderParts
    /// Transfers in progress and transfer failures, per entry.
    let transfers: TransferBoard
    /// The running downloads of placeholders.
    let hydrations: Hydrations
    /// The checks of cached copies before they are served or changed.
    let cacheVerifier: CacheVerifier
    /// Freeing local content: on request and to keep the cache within its budget.
    let eviction: Eviction
    /// Wakes the budget keeper when local content may have grown (writes, downloads, pins).
    let contentActivity: ContentActivity
    /// Wakes the background downloader when pins change (set by the sync engine).
    private let pinObserver = Mutex<(@Sendable () -> Void)?>(nil)

    init(parts: FolderParts) {
        let transfers = TransferBoard()
        let contentActivity = ContentActivity()
        self.parts = parts
        self.transfers = transfers
        self.contentActivity = contentActivity
        hydrations = Hydrations(parts: parts, transfers: transfers, contentActivity: contentActivity)
        cacheVerifier = CacheVerifier(parts: parts)
        eviction = Eviction(parts: parts, hydrations: hydrations, contentActivity: contentActivity)
    }

    func setPinObserver(_ observer: (@Sendable () -> Void)?) { pinObserver.withLock { $0 = observer } }

    func pinsChanged() { pinObserver.withLock { $0 }?() }
}
