import Foundation
import Glibc
import Logging
import SyncBackend
import Synchronization

/// The local content of a file taken for a merge: read `path` without a lock, and use what was
/// read only if `SyncFileSystem.adoptMerged`/`forkConflictCopy` still find the same `token`.
struct MergeLocalContent: @unchecked Sendable {
    var path: String
    var length: Int64
    let node: Node
    let token: UInt64
}

/// Conflicts in the tree: adopting a merge's result (`adoptMerged`), keeping local content as a
/// conflict copy (`forkConflictCopy`), and the list of unresolved conflicts (`conflicts`,
/// `resolveConflict`).
final class Conflicts: Sendable, HoldsTheTree {
    let parts: FolderParts
    let remote: RemoteChanges
    /// The container's version of each entry whose content is being merged now
    /// (`whileContesting`): the remote version a conflict copy's event names.
    private let contested = Mutex<[FileID: RemoteEntry]>([:])

    init(fileSystem: SyncFileSystem, remote: RemoteChanges) {
        parts = fileSystem.parts
        self.remote = remote
    }
}

extension Conflicts {
    /// Runs `body` (a merge of the content of `id`) knowing the container's version `current`,
    /// which the `conflict` event of a copy made meanwhile (`forkConflictCopy`) names.
    func whileContesting<Result>(
        _ id: FileID, with current: RemoteEntry, _ body: () throws(SyncFailure) -> Result
    ) throws(SyncFailure) -> Result {
        contested.withLock { $0[id] = current }
        defer { contested.withLock { $0[id] = nil } }
        return try body()
    }

    /// The cache file of `id` for merging, or nil if it is a placeholder, gone, or being written.
    func localContentForMerge(_ id: FileID) -> MergeLocalContent? {
        live.transact { tree in
            guard let node = tree.node(withID: id), !node.isUnlinked, node.kind == .file, !node.isPlaceholder,
                node.openWriters == 0, let token = node.contentToken()
            else { return nil }
            return MergeLocalContent(
                path: cache.path(for: id), length: node.size.load(ordering: .relaxed), node: node, token: token)
        }
    }

    /// Makes the local entry `id` the merged `state` after a conflict: its name, parent, mode,
    /// mtime and xattrs, and its content from `contentFile` (a complete, synced temporary file,
    /// installed atomically) or, without one, the content it has. The entry stays queued; its
    /// base becomes `current`, so the next commit goes on top of the container's version.
    /// Returns false (nothing changed) if the entry changed locally since `item` was taken, the
    /// file was written since `local` was taken, is open for writing, or the merged parent is not
    /// here yet: try again later. `event` (e.g. `merged`) is published for the entry once adopted.
    func adoptMerged(
        _ id: FileID, state: EntryState, onto current: RemoteEntry, contentFile: String?, local: MergeLocalContent?,
        item: OutboxItem, event: ChangeEvent.Kind? = nil
    ) -> Bool {
        var application = RemoteApplication()
        return live.transact { tree -> Bool in
            guard let node = adoptableNode(id, state: state, item: item, in: tree) else { return false }
            if let local, local.node !== node || !node.contentUnchanged(since: local.token) { return false }
            let before = (base: tree.bases[id], mtime: node.mtime.load(ordering: .relaxed))
            var state = state
            if let contentFile {
                var info = stat()
                guard stat(contentFile, &info) == 0 else { return false }
                state.size = Int64(info.st_size)
            }
            let entry = RemoteEntry(
                id: id, version: current.version, isDeleted: false, device: deviceIdentity, state: state)
            guard
                remote.update(
                    node, to: entry, contentFile: contentFile, tree: &tree,
                    application: &application)
            else { return false }
            if node.kind == .file {
                // The content machine's side of what `update` did: the file taken for upload is
                // `dirty` again, to be committed on top of the container's version (a new inode,
                // if the kernel held the old one, starts untaken: `dirty` too).
                let held = tree.node(withID: id) !== node
                node.apply(held ? .mergeAdoptedWhileHeld : .mergeAdopted, queued: true)
            }
            let base = SyncBase(version: current.version, manifest: current.state.manifest)
            tree.setBase(id, base, state: current.isDeleted ? nil : current.state)
            tree.noteConflictAttribute(of: tree.node(withID: id))
            if let event, let adopted = tree.node(withID: id) {
                if event == .conflict {
                    noteMarkersConflict(
                        adopted, local: local, localMtime: before.mtime, current: current, base: before.base,
                        tree: &tree)
                } else {
                    tree.noteChange(event, adopted, origin: .local)
                }
            }
            return true
        }
    }

    /// The `conflict` event of a file merged with conflict markers: its own copy, this mount's
    /// version as it was before the merge, the container's, and the base.
    private func noteMarkersConflict(
        _ node: Node, local: MergeLocalContent?, localMtime: Int64, current: RemoteEntry, base: SyncBase?,
        tree: inout TreeTransaction
    ) {
        guard tree.changeEvents.isObserved else { return }
        let path = tree.displayPath(of: node)
        let note = node.xattrs[ConflictNote.attribute].flatMap {
            try? JSONDecoder().decode(ConflictNote.self, from: Data($0))
        }
        let details = ConflictDetails(
            copy: path, copyFileID: node.fileID.hex, host: deviceName.text,
            reason: note?.reason ?? "conflict markers written", markers: true,
            local: ConflictVersion(fileID: node.fileID, size: local?.length, mtime: localMtime),
            remote: ConflictVersion(
                fileID: current.id, version: current.version, size: current.state.size, mtime: current.state.mtime,
                device: current.device),
            base: base.map { ConflictVersion(version: $0.version) })
        tree.noteConflict(details, at: path, fileID: node.fileID, type: .file, origin: .local)
    }

    /// Whether `adoptMerged` of `state` would find what it needs now (see `adoptableNode`).
    func canAdopt(_ id: FileID, state: EntryState, item: OutboxItem) -> Bool {
        live.transact { tree in adoptableNode(id, state: state, item: item, in: tree) != nil }
    }

    /// The entry, if a merged `state` can be adopted now: no local change since `item` was taken
    /// (a rename or chmod made meanwhile is newer than the merge), here, of the same kind, not
    /// open for writing, and the merged parent a live directory here that is not the entry
    /// itself or below it.
    ///
    /// A folder's merged placement can lie below the folder here: the container moved it into a
    /// folder that a move queued here put inside it (the container refuses that move, as a
    /// cycle). Adopting it would make a cycle cut off from the root, on which every walk up the
    /// tree runs forever; the merge waits instead, until the cycle rule has made the queued move
    /// give way (`ConflictDecision`: `wouldCreateCycle`).
    private func adoptableNode(_ id: FileID, state: EntryState, item: OutboxItem, in tree: TreeTransaction) -> Node? {
        guard outbox.isUnchanged(since: item), let node = tree.node(withID: id), !node.isUnlinked,
            node.openWriters == 0, node.kind == state.kind
        else { return nil }
        if let parent = state.parent {
            guard let directory = tree.liveDirectory(withID: parent) else { return nil }
            if node.kind == .directory && tree.isSameOrBelow(directory, node) { return nil }
        }
        return node
    }

    /// Whether `id` is a placeholder (its content is not here).
    func isPlaceholder(_ id: FileID) -> Bool {
        live.transact { tree in tree.node(withID: id)?.isPlaceholder ?? false }
    }

    /// Commits every recorded change durably now (before an irreversible step that depends on them).
    func persistNow() {
        do { try store.commit(durable: true) } catch { logger.error("cannot commit the state database: \(error)") }
    }

    /// Whether the directory `id` is here (linked).
    func hasLiveDirectory(_ id: FileID) -> Bool {
        live.transact { tree in tree.liveDirectory(withID: id) != nil }
    }

    /// Keeps the local content of `id` as a new entry beside it, named
    /// `NAME (conflict from HOST DATE TIME).EXT`, marked as a conflict copy (`ConflictNote`) and
    /// queued for upload, so the original can take another version. Returns the copy's name, or
    /// nil if the file was written since `local` was taken or is being written (try again later).
    func forkConflictCopy(_ id: FileID, local: MergeLocalContent, reason: String) -> FileName? {
        let copyID = FileID.random()
        let copyPath = cache.path(for: copyID)
        guard (try? cache.create(copyID)) != nil, CacheCopy.copy(from: local.path, to: copyPath) else {
            cache.remove(copyID)
            return nil
        }
        let name = live.transact { tree -> FileName? in
            let node = local.node
            guard node.contentUnchanged(since: local.token), node.openWriters == 0, !node.isUnlinked,
                let parentIno = node.parent, let parent = tree.nodes[parentIno]
            else { return nil }
            let now = Clock.nowNanoseconds()
            let name = ConflictNames.free(for: node.name, in: parent, host: deviceName.text, time: now)
            let record = EntryRecord(
                ino: tree.allocateIno(), fileID: copyID, parent: parent.ino, name: name, kind: .file, mode: node.mode,
                uid: node.uid, gid: node.gid, size: local.length, atime: now,
                mtime: node.mtime.load(ordering: .relaxed), ctime: now, symlinkTarget: nil)
            var xattrs = node.xattrs
            xattrs[ConflictNote.attribute] = ConflictNote.encoded(
                of: node.fileID, host: deviceName, reason: reason, now: now)
            let copy = Node(record: record, xattrs: xattrs)
            tree.bases.minted(copyID)
            tree.attach(copy, to: parent, as: name)
            tree.record([.upsert(record), .fact(.nextIno, tree.nextIno)])
            for (key, value) in xattrs { tree.record(.setXattr(copy.ino, name: key, value: value)) }
            tree.record(outbox.changed(copyID))
            tree.conflictCopies[copyID] = node.fileID
            if tree.changeEvents.isObserved {
                let originalPath = tree.displayPath(of: node)
                let copyPath = tree.displayPath(of: copy)
                let current = contested.withLock { $0[node.fileID] }
                let details = ConflictDetails(
                    copy: copyPath, copyFileID: copyID.hex, host: deviceName.text, reason: reason,
                    local: ConflictVersion(
                        path: copyPath, fileID: copyID, size: local.length, mtime: record.mtime),
                    remote: current.map {
                        ConflictVersion(
                            path: originalPath, fileID: node.fileID, version: $0.version, size: $0.state.size,
                            mtime: $0.state.mtime, device: $0.device)
                    } ?? ConflictVersion(path: originalPath, fileID: node.fileID),
                    base: tree.bases[node.fileID].map { ConflictVersion(version: $0.version) })
                tree.noteConflict(details, at: originalPath, fileID: node.fileID, type: .file, origin: .local)
            }
            tree.touchDirectory(parent, now: now)
            tree.invalidate(.entry(parent: parent.ino, name: name))
            return name
        }
        if name == nil { cache.remove(copyID) }
        return name
    }

    /// Forgets the conflict of `ino` (a conflict copy, a file with markers, or an original: then
    /// all its copies): the mark is removed as a local change, so every mount forgets it; the
    /// files stay. Returns how many marks were removed.
    func resolve(_ ino: InodeNumber) throws(FSError) -> Int {
        try live.transact { tree throws(FSError) in
            let node = try tree.node(ino)
            var marked = tree.conflictCopies.filter { $0.value == node.fileID }.map(\.key)
            if node.xattrs[ConflictNote.attribute] != nil { marked.append(node.fileID) }
            var removed = 0
            for id in Set(marked) {
                tree.conflictCopies[id] = nil
                guard let copy = tree.node(withID: id), !copy.isUnlinked,
                    copy.xattrs.removeValue(forKey: ConflictNote.attribute) != nil
                else { continue }
                copy.ctime = Clock.nowNanoseconds()
                tree.record([.removeXattr(copy.ino, name: ConflictNote.attribute), outbox.changed(id)])
                removed += 1
            }
            return removed
        }
    }

    /// Every unresolved conflict, by path.
    func unresolved() -> [ConflictListing] {
        live.transact { tree in
            tree.conflictCopies.keys.compactMap { id -> ConflictListing? in
                guard let copy = tree.liveConflictCopy(id), let value = copy.xattrs[ConflictNote.attribute]
                else { return nil }
                let note = try? JSONDecoder().decode(ConflictNote.self, from: Data(value))
                let original = note.flatMap { FileID(hex: $0.of) }.flatMap { tree.node(withID: $0) }
                return ConflictListing(
                    path: tree.displayPath(of: copy),
                    originalPath: original.flatMap { $0.isUnlinked ? nil : tree.displayPath(of: $0) },
                    // The note may come from another machine: remote data, shown on a terminal.
                    host: DeviceName.sanitised(note?.host ?? ""), time: DeviceName.sanitised(note?.time ?? ""),
                    reason: DeviceName.printable(note?.reason ?? "", maxBytes: 1024), fileID: id.hex,
                    originalFileID: original?.fileID.hex, keptHere: note?.host == deviceName.text)
            }.sorted { $0.path < $1.path }
        }
    }

    /// How many conflicts are unresolved.
    func unresolvedCount() -> Int {
        live.transact { tree in
            // Copies that are gone (or no longer marked) leave the index here.
            for id in tree.conflictCopies.keys where tree.node(withID: id)?.xattrs[ConflictNote.attribute] == nil {
                tree.conflictCopies[id] = nil
            }
            return tree.conflictCopies.keys.filter { tree.liveConflictCopy($0) != nil }.count
        }
    }

}

/// Copies a cache file's bytes and syncs the copy.
enum CacheCopy {
    static func copy(from source: String, to destination: String) -> Bool {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return false }
        defer { close(input) }
        let output = open(destination, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard output >= 0 else { return false }
        defer { close(output) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        while true {
            let count = read(input, buffer, 1 << 20)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            var written = 0
            while written < count {
                let result = write(output, buffer + written, count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                written += result
            }
        }
        return fsync(output) == 0
    }
}
