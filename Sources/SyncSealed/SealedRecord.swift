import Crypto
import SyncBackend

/// An entry's state, sealed: what the server stores for one version of an entry instead of its
/// name, parent, kind, mode, time, size, attributes, target and manifest.
///
/// The record's plaintext: `length (4) ‖ EntryState in RecordEncoding ‖ zeros` up to a
/// `SealedPadding` class, in an envelope whose associated data names the entry's file ID. So the
/// server learns a size class (which grows with the name's class and the number of chunks) and
/// nothing else; a record moved to another entry, another container or another epoch does not open.
public enum SealedRecord {
    public static func seal(_ state: EntryState, of id: FileID, keys: EpochKeys) -> [UInt8] {
        seal(state, of: id, keys: keys, nonce: AES.GCM.Nonce())
    }

    static func seal(_ state: EntryState, of id: FileID, keys: EpochKeys, nonce: AES.GCM.Nonce) -> [UInt8] {
        let encoded = RecordEncoding.encode(state)
        let stored = SealedPadding.bucket(SealedEnvelope.overhead + 4 + encoded.count)
        var inner = SealedWriter(capacity: stored - SealedEnvelope.overhead)
        inner.counted(encoded)
        inner.fixed(repeatElement(0, count: stored - SealedEnvelope.overhead - 4 - encoded.count))
        return SealedEnvelope.seal(
            inner.bytes, kind: "record", name: name(of: id), key: keys.record, keys: keys, nonce: nonce)
    }

    /// The epoch a record names (to pick its keys).
    public static func epoch(of record: [UInt8]) throws(SealedError) -> KeyEpoch {
        try SealedEnvelope.header(record)
    }

    /// The state sealed in `record` for entry `id`, checked against `EntryStateRules`.
    public static func open(_ record: [UInt8], of id: FileID, keys: EpochKeys) throws(SealedError) -> EntryState {
        let inner = try SealedEnvelope.open(record, kind: "record", name: name(of: id), key: keys.record, keys: keys)
        var reader = SealedReader(inner)
        guard let encoded = reader.counted(limit: inner.count), let padding = reader.fixed(reader.remaining),
            padding.allSatisfy({ $0 == 0 })
        else { throw .malformed("the inside of the record of \(id)") }
        let state = try RecordEncoding.decode(encoded)
        do {
            try EntryStateRules.check(state, of: id)
        } catch {
            throw .malformed("the record of \(id) breaks a rule: \(error)")
        }
        return state
    }

    static func name(of id: FileID) -> [UInt8] {
        var writer = SealedWriter()
        writer.fileID(id)
        return writer.bytes
    }
}

/// `EntryState` as bytes, one way only (attributes by name, in byte order): `kind (1) ‖ mode (4)
/// ‖ mtime (8) ‖ size (8) ‖ has parent (1) [‖ parent (16)] ‖ name (counted) ‖ has target (1) [‖
/// target (counted)] ‖ attribute count (4) ‖ (name, value) counted pairs ‖ chunk count (4) ‖
/// (SHA-256 (32) ‖ length (4)) per chunk`.
enum RecordEncoding {
    static func encode(_ state: EntryState) -> [UInt8] {
        var out = SealedWriter(capacity: 64 + state.name.count + 36 * state.manifest.count)
        out.byte(UInt8(state.kind.rawValue))
        out.uint32(state.mode)
        out.int64(state.mtime)
        out.int64(state.size)
        if let parent = state.parent {
            out.byte(1)
            out.fileID(parent)
        } else {
            out.byte(0)
        }
        out.counted(state.name)
        if let target = state.symlinkTarget {
            out.byte(1)
            out.counted(target)
        } else {
            out.byte(0)
        }
        let attributes = state.xattrs.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
        out.uint32(UInt32(attributes.count))
        for (name, value) in attributes {
            out.counted(Array(name.utf8))
            out.counted(value)
        }
        out.uint32(UInt32(state.manifest.count))
        for piece in state.manifest {
            out.fixed(piece.hash.bytes)
            out.uint32(UInt32(piece.length))
        }
        return out.bytes
    }

    static func decode(_ bytes: [UInt8]) throws(SealedError) -> EntryState {
        var reader = SealedReader(bytes)
        guard let kindByte = reader.byte(), let kind = NodeKind(rawValue: Int64(kindByte)),
            let mode = reader.uint32(), let mtime = reader.int64(), let size = reader.int64(),
            let hasParent = reader.byte(), hasParent <= 1
        else { throw .malformed("a record's fixed fields") }
        var parent: FileID?
        if hasParent == 1 {
            guard let id = reader.fileID() else { throw .malformed("a record's parent") }
            parent = id
        }
        guard let name = reader.counted(limit: 255), let hasTarget = reader.byte(), hasTarget <= 1 else {
            throw .malformed("a record's name")
        }
        var target: [UInt8]?
        if hasTarget == 1 {
            guard let value = reader.counted(limit: EntryStateRules.maxSymlinkTarget) else {
                throw .malformed("a record's symlink target")
            }
            target = value
        }
        guard let attributeCount = reader.uint32(), attributeCount <= 65_536 else {
            throw .malformed("a record's attributes")
        }
        var xattrs: [String: [UInt8]] = [:]
        var previous: [UInt8]?
        for _ in 0..<attributeCount {
            guard let nameBytes = reader.counted(limit: 255),
                let value = reader.counted(limit: EntryStateRules.maxXattrValue),
                previous.map({ $0.lexicographicallyPrecedes(nameBytes) }) ?? true,
                let attribute = String(validating: nameBytes, as: UTF8.self)
            else { throw .malformed("a record's attribute") }
            previous = nameBytes
            xattrs[attribute] = value
        }
        guard let chunkCount = reader.uint32(), Int(chunkCount) <= reader.remaining / 36 else {
            throw .malformed("a record's manifest")
        }
        var manifest: [ChunkRef] = []
        manifest.reserveCapacity(Int(chunkCount))
        for _ in 0..<chunkCount {
            guard let hashBytes = reader.fixed(32), let hash = ChunkHash(bytes: hashBytes), let length = reader.uint32()
            else {
                throw .malformed("a record's chunk")
            }
            manifest.append(ChunkRef(hash: hash, length: Int64(length)))
        }
        guard reader.isAtEnd else { throw .malformed("bytes after a record") }
        return EntryState(
            parent: parent, name: name, kind: kind, mode: mode, mtime: mtime, size: size, xattrs: xattrs,
            symlinkTarget: target, manifest: manifest)
    }
}
