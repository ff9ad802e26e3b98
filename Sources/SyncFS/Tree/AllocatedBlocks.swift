import SyncBackend

/// A local file's `st_blocks`, measured once (a `stat` of its cache file) and kept in memory
/// while the cache file cannot have changed (after the kernel drops its caches, a
/// walk of the tree asks for the attributes of every file again, and a `stat` per file in the
/// cache directory — itself dropped from the kernel's caches — cost a disk read per file).
///
/// Contract: a measurement is reused only while its `key` still matches the node. The key holds
/// what every change of a cache file's bytes changes:
/// - writes, truncates, `fallocate`, a remote content installed: each begins with
///   `Node.beginContentChange` (`contentChangesStarted`), and a measurement taken while a change
///   was in progress is not kept (`Node.contentToken` is nil then; and it is dropped if a change
///   began while the `stat` ran);
/// - a file ID handed to another node (save-by-rename, a retired inode): `fileID`;
/// - the file's length: `size`;
/// - downloads, eviction, a cached copy discarded: the content stops or starts being local
///   through `Node.apply` (the content machine), which forgets the measurement; placeholders (content not
///   local, a download may be writing) are never kept — they are measured at every request,
///   unless their cache file is known not to exist (`ContentCache.isKnownAbsent`): 0 then;
/// - a cache file lost (`Node.contentLost`): measured every time.
/// So a reused value is what a `stat` would answer, except for data the kernel still holds in
/// its page cache, which `st_blocks` never counted (doc/SEMANTICS.md, "Sizes, blocks and holes").
struct AllocatedBlocks: Sendable, Equatable {
    struct Key: Sendable, Equatable {
        var contentToken: UInt64
        var fileID: FileID
        var size: Int64
    }
    var key: Key
    var blocks: Int64

    /// The key of `node`'s content now, or nil when its blocks must be measured every time (a
    /// content change in progress, a placeholder, a lost cache file).
    static func key(of node: Node) -> Key? {
        guard node.kind == .file, !node.isPlaceholder, !node.contentLost,
            let token = node.contentToken()
        else { return nil }
        return Key(contentToken: token, fileID: node.fileID, size: node.size.load(ordering: .relaxed))
    }
}

extension TreeTransaction {
    /// 512-byte blocks of `node`'s cache file: the kept measurement when it is still valid
    /// (`AllocatedBlocks`), else a `stat`, kept when nothing changed the content meanwhile.
    ///
    /// A placeholder whose cache file the content cache knows to be absent
    /// (`ContentCache.isKnownAbsent`: never created since the directory was listed at load, or
    /// removed by the daemon — eviction, a discarded copy) answers 0 without a `stat`: what the
    /// `stat` of a missing file answers (`allocatedBytes`), so no walk of placeholders touches
    /// the cache directory. A placeholder that has one (a download writing it, an open handle's
    /// empty file) is measured; a local file always is, since a wrong 0 would make
    /// `tar --sparse` or `cp` skip its data.
    func allocatedBlocks(of node: Node) -> Int64 {
        if node.isPlaceholder && cache.isKnownAbsent(node.fileID) { return 0 }
        let key = AllocatedBlocks.key(of: node)
        if let key, let kept = node.allocatedBlocks, kept.key == key { return kept.blocks }
        let blocks = cache.allocatedBytes(of: key?.fileID ?? node.fileID) / 512
        if let key, node.contentUnchanged(since: key.contentToken) {
            node.allocatedBlocks = AllocatedBlocks(key: key, blocks: blocks)
        } else {
            node.allocatedBlocks = nil
        }
        return blocks
    }
}
