import Foundation
import SyncBackend

/// The conflict index (`Namespace.conflictCopies`) and conflict names: which entries are in an
/// unresolved conflict, and moving an entry aside to a conflict name. Read and kept by every
/// transaction that changes an entry's xattrs or name.
extension TreeTransaction {
    /// Whether `node` is a conflict copy (or has markers) or the original of one.
    func isInConflict(_ node: Node) -> Bool {
        if node.xattrs[ConflictNote.attribute] != nil { return liveConflictCopy(node.fileID) != nil }
        return conflictCopies.contains { copy, original in
            original == node.fileID && liveConflictCopy(copy) != nil
        }
    }

    /// Keeps `conflictCopies` true for `node` after its xattrs changed (remote changes).
    mutating func noteConflictAttribute(of node: Node?) {
        guard let node else { return }
        conflictCopies[node.fileID] = ConflictNote.original(in: node.xattrs)
    }

    /// The conflict copy `id` if its conflict is unresolved: it is here, marked, and the entry
    /// it was split from is here too (deleting either resolves the conflict).
    func liveConflictCopy(_ id: FileID) -> Node? {
        guard let node = node(withID: id), !node.isUnlinked, node.xattrs[ConflictNote.attribute] != nil,
            let original = conflictCopies[id]
        else { return nil }
        if original != id {
            guard let originalNode = self.node(withID: original), !originalNode.isUnlinked else { return nil }
        }
        return node
    }

    /// Every entry in an unresolved conflict (copies and originals), for passes over the tree.
    func conflictedEntries() -> Set<FileID> {
        var entries = Set<FileID>()
        for (copy, original) in conflictCopies where liveConflictCopy(copy) != nil {
            entries.insert(copy)
            entries.insert(original)
        }
        return entries
    }

    /// Gives `node` a free conflict name in `parent` (keep both:
    /// `NAME (conflict from HOST DATE TIME)`), marks it as a conflict copy of `original` (the
    /// entry that took its name) and queues it: its record, mark and outbox row are recorded, and
    /// a `conflict` event published (`origin`: who took the name, this mount or the container).
    /// `reason` goes into the mark and the event (`selectiveSyncReason`: the name is held by a
    /// folder excluded from this device).
    mutating func moveToConflictName(
        _ node: Node, in parent: Node, of original: FileID?, host: DeviceName, origin: ChangeEvent.Origin,
        reason: String = Self.nameTakenReason
    ) -> FileName {
        let now = Clock.nowNanoseconds()
        let newName = ConflictNames.free(for: node.name, in: parent, host: host.text, time: now)
        let contestedPath = pathIfObserved(node)
        renameWithin(parent, node, to: newName, at: now)
        if let contestedPath {
            let copyPath = displayPath(of: node)
            let holder = original.flatMap { self.node(withID: $0) }
            let details = ConflictDetails(
                copy: copyPath, copyFileID: node.fileID.hex, host: host.text, reason: reason,
                local: conflictVersion(of: node, at: copyPath),
                remote: holder.map { conflictVersion(of: $0, at: contestedPath) }
                    ?? original.map { ConflictVersion(path: contestedPath, fileID: $0) })
            noteConflict(details, at: contestedPath, fileID: original, type: .init(node.kind), origin: origin)
        }
        node.recordHandedToStore()
        if let original {
            let value = ConflictNote.encoded(of: original, host: host, reason: reason, now: now)
            node.xattrs[ConflictNote.attribute] = value
            conflictCopies[node.fileID] = original
            record(.setXattr(node.ino, name: ConflictNote.attribute, value: value))
        }
        record(.upsert(node.record))
        record(outbox.changed(node.fileID))
        return newName
    }

    static let nameTakenReason = "another entry took the name"
    /// The reason of a selective sync conflict: a local entry made at the name of a folder
    /// excluded from this device (`Namespace+Exclusions`).
    static let selectiveSyncReason = "selective sync conflict: the name is held by a folder excluded on this device"

    /// Publishes a `conflict` event about the entry at `path` (`fileID`), with `details`.
    mutating func noteConflict(
        _ details: ConflictDetails, at path: String, fileID: FileID?, type: ChangeEvent.EntryType,
        origin: ChangeEvent.Origin
    ) {
        guard changeEvents.isObserved else { return }
        publish(
            ChangeEvent(
                kind: .conflict, path: path, origin: origin, fileID: fileID, type: type, conflict: details))
    }

    /// A conflict copy made elsewhere arrived (`copy`, created from the container's `entry`): the
    /// `conflict` event of this machine (origin remote), for an app that asks its user here too.
    /// Here the original holds the version this machine had (`local`), the copy the one from the
    /// machine named in its note (`remote`); their base is not known here.
    mutating func noteArrivedConflictCopy(_ copy: Node, entry: RemoteEntry) {
        guard changeEvents.isObserved, let value = copy.xattrs[ConflictNote.attribute],
            let note = try? JSONDecoder().decode(ConflictNote.self, from: Data(value)),
            let originalID = FileID(hex: note.of), originalID != copy.fileID,
            let original = node(withID: originalID), !original.isUnlinked
        else { return }
        let originalPath = displayPath(of: original)
        let copyPath = displayPath(of: copy)
        let details = ConflictDetails(
            copy: copyPath, copyFileID: copy.fileID.hex, host: DeviceName.sanitised(note.host),
            reason: DeviceName.printable(note.reason, maxBytes: 1024),
            local: conflictVersion(of: original, at: originalPath),
            remote: ConflictVersion(
                path: copyPath, fileID: copy.fileID, version: entry.version, size: entry.state.size,
                mtime: entry.state.mtime, device: entry.device))
        noteConflict(details, at: originalPath, fileID: originalID, type: .init(original.kind), origin: .remote)
    }

    /// What is known here of the version `node` holds (at `path`): its ID, base version (the
    /// container's version it derives from, if any), size and mtime.
    func conflictVersion(of node: Node, at path: String) -> ConflictVersion {
        ConflictVersion(
            path: path, fileID: node.fileID, version: bases[node.fileID]?.version,
            size: node.kind == .file ? node.size.load(ordering: .relaxed) : nil,
            mtime: node.mtime.load(ordering: .relaxed))
    }

    /// Renames `node` within `parent` to `name`, or, if another entry holds it, to a free
    /// conflict name of it (`NAME (conflict from HOST DATE TIME)`), and queues the rename: its
    /// record and outbox row are recorded. Returns the name given.
    mutating func rename(_ node: Node, in parent: Node, preferring name: FileName, host: DeviceName) -> FileName {
        let now = Clock.nowNanoseconds()
        let newName =
            parent.children[name] == nil ? name : ConflictNames.free(for: name, in: parent, host: host.text, time: now)
        let oldPath = pathIfObserved(node)
        renameWithin(parent, node, to: newName, at: now)
        record(.upsert(node.record))
        record(outbox.changed(node.fileID))
        noteChange(.renamed, node, origin: .local, oldPath: oldPath)
        return newName
    }

    /// Moves `node` to `newName` in `parent` (its folder), invalidating both names in the
    /// kernel; records nothing (the callers record the node with what else they changed).
    private mutating func renameWithin(_ parent: Node, _ node: Node, to newName: FileName, at now: Int64) {
        invalidate(.entry(parent: parent.ino, name: node.name))
        invalidate(.entry(parent: parent.ino, name: newName))
        detach(node)
        attach(node, to: parent, as: newName)
        node.ctime = now
    }
}
