/// `user.syncfs.state` (and `status`'s state) as a pure function of the file's content state and
/// what the transfer board, the outbox and the conflict index say about it (doc/SEMANTICS.md,
/// "The content state machine"; `VisibleContentStateTests` checks it case by case and over every
/// combination of the flags it reads).
///
/// The order is today's: a running download first, then a transfer on the board, local changes
/// (with the outbox's last error), a failed download of a placeholder, a conflict, and at last the
/// residency. `lost` and `writeFailed` (which the cascade did not know) read `error` before
/// anything but a running download, whose residency they cannot have.
struct VisibleContentState {
    /// The file's content state (`ContentLifecycle.State`).
    var content: ContentLifecycle.State
    /// A running download has every chunk; only its final sync is left (`Hydration.isComplete`):
    /// shown as `local` already.
    var downloadComplete = false
    /// The transfer board's entry in progress for the file, if any (`TransferBoard.transfer`):
    /// a download (also a remote content change of a local file) or an upload.
    var transfer: TransferBoard.Direction?

    /// The inputs one by one (the mapping the earlier cascade used, which its tests compare
    /// against): a download running that has not ended (failed or cancelled); local changes (an
    /// outbox row or writes not yet recorded); an upload in flight is not told from a queued one
    /// (both `dirty` here). `runningDownloadComplete`: nil without a running download, else
    /// whether it has every chunk (`Hydration.isComplete`).
    init(
        runningDownloadComplete: Bool?, isPlaceholder: Bool, hasLocalChanges: Bool, transfer: TransferBoard.Direction?,
        contentLost: Bool = false, writeFailed: Bool = false
    ) {
        content = ContentLifecycle.State(
            downloadRunning: runningDownloadComplete != nil, isPlaceholder: isPlaceholder,
            hasLocalChanges: hasLocalChanges, contentLost: contentLost, writeFailed: writeFailed)
        downloadComplete = runningDownloadComplete ?? false
        self.transfer = transfer
    }

    init(content: ContentLifecycle.State, downloadComplete: Bool = false, transfer: TransferBoard.Direction? = nil) {
        self.content = content
        self.downloadComplete = downloadComplete
        self.transfer = transfer
    }

    /// The visible state. The three last inputs are asked only when the answer depends on them
    /// (the conflict index costs a walk up the tree), in today's order.
    func value(
        outboxError: @autoclosure () -> Bool, downloadFailed: @autoclosure () -> Bool,
        inConflict: @autoclosure () -> Bool
    ) -> ContentState {
        if content.residency == .hydrating { return downloadComplete ? .local : .downloading }
        if content.residency == .lost || content.modification == .writeFailed { return .error }
        if let transfer { return transfer == .download ? .downloading : .uploading }
        if content.modification != .clean { return outboxError() ? .error : .modified }
        if content.residency == .placeholder && downloadFailed() { return .error }
        if inConflict() { return .conflict }
        return content.residency == .placeholder ? .online : .local
    }
}
