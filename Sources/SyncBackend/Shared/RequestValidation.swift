/// The shape checks every container makes before looking at its data: a request that fails them
/// is a client bug, answered with `ContainerProtocolError.invalidRequest` (never retried).
///
/// The root (`FileID.root`) cannot be deleted; `baseVersion` is a version a container can have (at
/// most 2^63 - 1: versions are SQLite integers), so an absurd one is a malformed request, not a
/// version conflict; a put's state follows `EntryStateRules` (the same rules a client applies to
/// what it receives, `RemoteEntryValidation`).
package enum RequestValidation {
    package static func check(_ request: CommitRequest) throws(ContainerProtocolError) {
        guard request.baseVersion <= FeedPosition.newestPossibleVersion else {
            throw .invalidRequest("baseVersion \(request.baseVersion) is beyond any version (at most 2^63 - 1)")
        }
        guard case .put(let state) = request.change else {
            if request.id == .root { throw .invalidRequest("the root directory cannot be deleted") }
            return
        }
        try EntryStateRules.check(state, of: request.id)
    }
}
