/// What this device holds of an entry, as `user.syncfs.state` and `status` name it.
public enum ContentState: String, Codable, Sendable, CaseIterable {
    /// A placeholder: the content is only in the container.
    case online
    case downloading
    /// Here and in sync.
    case local
    /// Local changes wait for upload.
    case modified
    case uploading
    /// The last transfer failed (see `user.syncfs.error`).
    case error
    /// In sync, but an unresolved conflict copy of it exists, or it is one (`syncfs-mount conflicts`).
    case conflict
    /// Its local change is held by the ignore rules: never uploaded (doc/SEMANTICS.md, "Ignored
    /// paths on a mount").
    case ignored
}

/// Whether an entry is kept downloaded.
public enum PinState: String, Codable, Sendable {
    case pinned = "1"
    /// A directory above is pinned.
    case inherited
    case none = "0"
}

/// Counts of the files below a directory (or of the whole mount) by state.
public struct FileCounts: Codable, Sendable, Equatable {
    public var local = 0
    public var online = 0
    public var downloading = 0
    public var modified = 0
    public var uploading = 0
    public var error = 0
    public var conflict = 0
    public var pinned = 0
    /// Nil from an older daemon (and while none is ignored, so older clients read the counts).
    public var ignored: Int?

    mutating func add(_ state: ContentState, pinned isPinned: Bool) {
        add(state, 1)
        if isPinned { pinned += 1 }
    }

    /// A file counted as `from` is in state `to` (pinned or not, it stays so).
    mutating func move(from: ContentState, to: ContentState) {
        guard from != to else { return }
        add(from, -1)
        add(to, 1)
    }

    private mutating func add(_ state: ContentState, _ sign: Int) {
        switch state {
        case .online: online += sign
        case .downloading: downloading += sign
        case .local: local += sign
        case .modified: modified += sign
        case .uploading: uploading += sign
        case .error: error += sign
        case .conflict: conflict += sign
        case .ignored: ignored = (ignored ?? 0) + sign
        }
    }
}
