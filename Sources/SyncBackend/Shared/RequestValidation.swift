/// The shape checks every container makes before looking at its data: a request that fails them
/// is a client bug, answered with `ContainerProtocolError.invalidRequest` (never retried).
///
/// The root (`FileID.root`) cannot be deleted; a put's state follows `EntryStateRules` (the same
/// rules a client applies to what it receives, `RemoteEntryValidation`).
enum RequestValidation {
    static func check(_ request: CommitRequest) throws(ContainerProtocolError) {
        guard case .put(let state) = request.change else {
            if request.id == .root { throw .invalidRequest("the root directory cannot be deleted") }
            return
        }
        try EntryStateRules.check(state, of: request.id)
    }
}
