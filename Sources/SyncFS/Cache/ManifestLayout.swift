import SyncBackend

/// Where each chunk of a manifest starts in the file it describes, and that file's length.
struct ManifestLayout {
    let offsets: [Int64]
    let length: Int64

    init(_ manifest: [ChunkRef]) {
        var offsets: [Int64] = []
        offsets.reserveCapacity(manifest.count)
        var position: Int64 = 0
        for ref in manifest {
            offsets.append(position)
            position += ref.length
        }
        self.offsets = offsets
        length = position
    }
}
