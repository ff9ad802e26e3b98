import Glibc
import Logging

extension UploadRecords {
    /// Checks the cache file of `node` (open as `descriptor`, negative if `open` failed) against
    /// the recorded size before an upload reads it. Missing or short: the node becomes `lost`
    /// (logged once, when it does) and the refusal's reason is returned; nil if it may be read.
    /// Call inside the transaction that takes the upload.
    func lostContent(_ node: Node, descriptor: Int32, recorded: Int64) -> String? {
        // Only a missing file is lost; another failure to open (EMFILE, …) is retried later.
        if descriptor < 0 && errno != ENOENT { return nil }
        let (event, onDisk) = CacheFileCheck.event(descriptor: descriptor >= 0 ? descriptor : nil, recorded: recorded)
        guard let event, event != .cacheFileLonger else { return nil }
        let reason = CacheFileCheck.lostReason(event, recorded: recorded, onDisk: onDisk)
        if node.apply(event, queued: true).actions.contains(.markLost) {
            logger.error("not uploading \(node.name) (file \(node.fileID)): \(reason)")
        }
        return reason
    }
}
