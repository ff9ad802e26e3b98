import SyncBackend

/// The server's own limits on a commit, beyond the container's rules (doc/PROTOCOL.md, "Limits"):
/// - `device`: 1...`WireProtocol.maxDeviceBytes` bytes of UTF-8, no control characters;
/// - extended attributes (puts): each name starts with `user.`, has 6...255 bytes and no NUL;
///   each value at most `maxXattrValueBytes`; names and values together at most
///   `maxXattrTotalBytes`.
/// A violation is `400 invalidRequest`; nothing is committed.
enum CommitLimits {
    static func check(_ request: CommitRequest) throws(WireFailure) {
        try checkDevice(request.device)
        if case .put(let state) = request.change { try checkXattrs(state.xattrs) }
    }

    static func checkDevice(_ device: String) throws(WireFailure) {
        guard (1...WireProtocol.maxDeviceBytes).contains(device.utf8.count) else {
            throw WireFailure(
                .invalidRequest,
                "the device must have 1 to \(WireProtocol.maxDeviceBytes) bytes, not \(device.utf8.count)")
        }
        guard !device.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw WireFailure(.invalidRequest, "the device must not contain control characters")
        }
    }

    static func checkXattrs(_ xattrs: [String: [UInt8]]) throws(WireFailure) {
        var total = 0
        for (name, value) in xattrs {
            let length = name.utf8.count
            guard name.hasPrefix("user."), (6...WireProtocol.maxXattrNameBytes).contains(length),
                !name.utf8.contains(0)
            else {
                throw WireFailure(
                    .invalidRequest,
                    "extended attribute names start with 'user.' and have 6 to \(WireProtocol.maxXattrNameBytes) bytes, no NUL"
                )
            }
            guard value.count <= WireProtocol.maxXattrValueBytes else {
                throw WireFailure(
                    .invalidRequest,
                    "the extended attribute \(name) has \(value.count) bytes, more than \(WireProtocol.maxXattrValueBytes)"
                )
            }
            total += length + value.count
        }
        guard total <= WireProtocol.maxXattrTotalBytes else {
            throw WireFailure(
                .invalidRequest,
                "the extended attributes take \(total) bytes, more than \(WireProtocol.maxXattrTotalBytes) together")
        }
    }
}
