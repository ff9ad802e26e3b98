/// The shape checks every container makes before looking at its data: a request that fails them
/// is a client bug, answered with `ContainerProtocolError.invalidRequest` (never retried).
///
/// These rules restate `EntryState`'s and `CommitRequest`'s documentation:
/// - the root (`FileID.root`) cannot be deleted; a put for it has no parent, an empty name and is
///   a directory;
/// - any other entry has a parent and a name of 1...255 bytes without `/` or NUL, not `.` or `..`
///   (a name is one path component; clients turn names into directory entries);
/// - `baseVersion` is a version a container can have (at most 2^63 - 1: versions are SQLite
///   integers), so an absurd one is a malformed request, not a version conflict;
/// - `mode` fits `0o7777`;
/// - a file's manifest lengths are positive and add up to its `size`; a directory or symlink has
///   no manifest and size 0; a symlink, and only a symlink, has a target.
enum RequestValidation {
    static func check(_ request: CommitRequest) throws(ContainerProtocolError) {
        guard request.baseVersion <= FeedPosition.newestPossibleVersion else {
            throw .invalidRequest("baseVersion \(request.baseVersion) is beyond any version (at most 2^63 - 1)")
        }
        guard case .put(let state) = request.change else {
            if request.id == .root { throw .invalidRequest("the root directory cannot be deleted") }
            return
        }
        if request.id == .root {
            guard state.parent == nil, state.name.isEmpty, state.kind == .directory else {
                throw .invalidRequest("the root must be a directory with no parent and an empty name")
            }
        } else {
            guard state.parent != nil else { throw .invalidRequest("entry \(request.id) has no parent") }
            try checkName(state.name)
        }
        guard state.mode & ~0o7777 == 0 else { throw .invalidRequest("mode \(state.mode) is not within 0o7777") }
        try checkContent(state)
    }

    /// 1...255 bytes, no `/`, no NUL, not `.` or `..`.
    static func checkName(_ name: [UInt8]) throws(ContainerProtocolError) {
        guard (1...255).contains(name.count), !name.contains(0x2F), !name.contains(0) else {
            throw .invalidRequest("a name must have 1 to 255 bytes and no '/' or NUL")
        }
        guard name != [0x2E], name != [0x2E, 0x2E] else {
            throw .invalidRequest("'.' and '..' are not names an entry can have")
        }
    }

    private static func checkContent(_ state: EntryState) throws(ContainerProtocolError) {
        switch state.kind {
        case .file:
            guard state.symlinkTarget == nil else { throw .invalidRequest("a file has no symlink target") }
            var total: Int64 = 0
            for piece in state.manifest {
                guard piece.length > 0 else { throw .invalidRequest("a manifest chunk length must be positive") }
                let (sum, overflow) = total.addingReportingOverflow(piece.length)
                guard !overflow else { throw .invalidRequest("the manifest lengths overflow") }
                total = sum
            }
            guard total == state.size else {
                throw .invalidRequest("file size \(state.size) differs from the manifest's total \(total)")
            }
        case .directory, .symlink:
            guard state.manifest.isEmpty, state.size == 0 else {
                throw .invalidRequest("only a file has a manifest and a size")
            }
            guard (state.kind == .symlink) == (state.symlinkTarget != nil) else {
                throw .invalidRequest("a symlink, and only a symlink, has a target")
            }
        }
    }
}
