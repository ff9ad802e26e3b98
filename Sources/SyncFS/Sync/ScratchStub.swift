import SyncBackend
extension SyncEngine {
    func adopt(_ merged: EntryState, for item: OutboxItem, current: RemoteEntry, local: MergeLocalContent?, oursManifest: [ChunkRef]? = nil, contentFile: String? = nil) throws(SyncFailure) -> Bool { false }
    func mergeContent(item: OutboxItem, ours: EntryState, merged: EntryState, current: RemoteEntry, baseManifest: [ChunkRef]?) throws(SyncFailure) -> Bool { false }
}
