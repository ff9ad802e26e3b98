import Glibc

/// The cache file of a local file checked against the size recorded for it, where it is read
/// for an upload and at mount (`ContentLifecycle.cacheFileCheck`).
enum CacheFileCheck {
    /// The check's event for the cache file open as `descriptor` (nil: missing), and its size on
    /// disk (nil: missing, or `fstat` failed, which vouches for nothing either).
    static func event(descriptor: Int32?, recorded: Int64) -> (ContentLifecycle.Event?, Int64?) {
        var onDisk: Int64?
        if let descriptor {
            var info = stat()
            if fstat(descriptor, &info) == 0 { onDisk = Int64(info.st_size) }
        }
        return (ContentLifecycle.cacheFileCheck(recorded: recorded, onDisk: onDisk), onDisk)
    }

    /// What `status` and the log say of a file whose content was lost.
    static func lostReason(_ event: ContentLifecycle.Event, recorded: Int64, onDisk: Int64?) -> String {
        let what =
            event == .cacheFileMissing
            ? "its cached content is missing"
            : "its cached content is shorter than written (\(onDisk ?? 0) of \(recorded) bytes)"
        return "\(what): \(consequence)"
    }

    /// The refusal of a file already `lost` (the specific cause was logged when it became so).
    static let lostReason = "its cached content is missing or shorter than written: \(consequence)"

    private static let consequence =
        "the local edit is lost and is not uploaded; the container's version is kept"
        + " (read it from another mount, or overwrite the file with O_TRUNC to replace it)"

}
