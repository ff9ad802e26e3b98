import SyncBackend

/// How a sealed object (a record, a ledger entry, a keyring) is stored as an entry of the
/// container underneath, which holds it without reading it:
/// - under the root, named by its own file ID in hex (so the server's name check is always met
///   and says nothing), kind `file`, mode 0600, mtime 0;
/// - the sealed bytes in the attributes `user.s0`, `user.s1`, … (64 KiB each, at most
///   `maximumSealedBytes` in all);
/// - the manifest the server sees: the opaque IDs and padded sizes of the chunks the record's
///   content uses, so its collector, its quotas and its `chunksMissing` check keep working.
/// The root stays a directory (the container requires it) with its own sealed record in the same
/// attributes.
public enum OpaqueEntry {
    static let attributePrefix = "user.s"
    static let attributeBytes = EntryStateRules.maxXattrValue
    /// What fits in the attributes an entry may carry (names included).
    static let maximumSealedBytes = 15 * attributeBytes

    /// The state the server stores for `sealed` as entry `id`, referencing `chunks`.
    static func state(of id: FileID, sealed: [UInt8], chunks: [ChunkRef]) -> EntryState {
        precondition(sealed.count <= maximumSealedBytes, "a sealed object too large for its entry")
        var xattrs: [String: [UInt8]] = [:]
        var index = 0
        var offset = 0
        repeat {
            let end = min(offset + attributeBytes, sealed.count)
            xattrs["\(attributePrefix)\(index)"] = Array(sealed[offset..<end])
            index += 1
            offset = end
        } while offset < sealed.count
        if id == .root {
            return EntryState(parent: nil, name: [], kind: .directory, mode: 0o700, mtime: 0, size: 0, xattrs: xattrs)
        }
        return EntryState(
            parent: .root, name: Array(id.hex.utf8), kind: .file, mode: 0o600, mtime: 0,
            size: chunks.reduce(0) { $0 + $1.length }, xattrs: xattrs, manifest: chunks)
    }

    /// The sealed bytes of a stored entry, or nil if it is not shaped as `state(of:sealed:chunks:)`
    /// makes it (then it was not made by a member, and is refused).
    static func sealed(from state: EntryState, of id: FileID) -> [UInt8]? {
        if id == .root {
            guard state.parent == nil, state.kind == .directory, state.manifest.isEmpty else { return nil }
        } else {
            guard state.parent == .root, state.name == Array(id.hex.utf8), state.kind == .file,
                state.symlinkTarget == nil
            else { return nil }
        }
        var sealed: [UInt8] = []
        for index in 0..<state.xattrs.count {
            guard let part = state.xattrs["\(attributePrefix)\(index)"] else { return nil }
            guard part.count == attributeBytes || index == state.xattrs.count - 1 else { return nil }
            sealed += part
        }
        return sealed.isEmpty ? nil : sealed
    }

    /// The sealed bytes `entry` stores (a record, a ledger entry, a keyring, a join request), or
    /// nil if it is not shaped as a member stores one: what the web page hands a browser that
    /// opens the container itself.
    public static func sealedBytes(of entry: RemoteEntry) -> [UInt8]? {
        entry.isDeleted ? nil : sealed(from: entry.state, of: entry.id)
    }
}

extension OpaqueEntry {
    /// The manifest the server's copy of a record carries: each chunk's keyed ID and its padded
    /// size (`SealedChunkCodec.storedBound`).
    static func serverManifest(of state: EntryState, keys: EpochKeys) -> [ChunkRef] {
        state.manifest.map {
            ChunkRef(
                hash: keys.chunkID(for: $0.hash),
                length: Int64(SealedChunkCodec.storedBound(plainLength: Int($0.length))))
        }
    }
}
