/// Names for the "keep both" outcome: `report (conflicted copy from 1a2b3c4d).txt`,
/// then `… 2).txt` and so on until one is free in the directory. Stays within NAME_MAX.
enum ConflictNames {
    /// A name not present in `directory` (call under the namespace lock).
    static func free(for name: FileName, in directory: Node, device: String) -> FileName {
        let bytes = name.bytes
        // The extension is kept at the end so programs still recognise the file.
        var stem = bytes
        var ext: [UInt8] = []
        if let dot = bytes.lastIndex(of: 46), dot > 0, bytes.count - dot <= 16 {
            stem = Array(bytes[..<dot])
            ext = Array(bytes[dot...])
        }
        let tag = "conflicted copy from \(device.prefix(8))"
        var attempt = 1
        while true {
            let suffix = Array((attempt == 1 ? " (\(tag))" : " (\(tag) \(attempt))").utf8)
            let room = FileName.maxLength - suffix.count - ext.count
            let candidate = FileName(bytes: Array(stem.prefix(max(1, room))) + suffix + ext)
            if directory.children[candidate] == nil { return candidate }
            attempt += 1
        }
    }
}

/// A kernel cache entry to drop after a change the kernel did not make itself.
enum KernelInvalidation {
    /// The name in the directory (added, removed or pointing elsewhere).
    case entry(parent: InodeNumber, name: FileName)
    /// Attributes only.
    case attributes(InodeNumber)
    /// Attributes and cached pages (the content was replaced).
    case content(InodeNumber)
    /// The name no longer leads to `child`, which is gone (deleted, or replaced by a new inode):
    /// the kernel also drops the inode's link count, so inotify watchers of the file itself get
    /// IN_DELETE_SELF, as after a local unlink or replace-by-rename.
    case deleted(parent: InodeNumber, child: InodeNumber, name: FileName)
}
