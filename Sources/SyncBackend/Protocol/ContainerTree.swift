/// Reading a container's live tree by names: the lookups a server needs to serve a path (a share
/// link, a web page) without reading the whole feed. Read-only. Server-side containers (local,
/// PostgreSQL, in-memory) conform beside `Container`; clients never need it.
///
/// Contracts every implementation keeps (`Tests/SyncBackendTests/ContainerTreeConformanceTests.swift`):
/// - Only live entries are answered: a tombstone is never a child.
/// - `child(named:of:)` is the live entry called `name` (exact bytes) whose parent is `parent`,
///   or nil; nil also when `parent` is not a live directory.
/// - `children(of:after:limit:)` lists `parent`'s live children ordered by their name bytes
///   (unsigned, lexicographic), only those whose name sorts after `after` (nil: from the first),
///   at most `limit`; empty when `parent` is not a live directory.
/// - `limit` must be within `TreePage.limits` (else `invalidRequest`).
public protocol ContainerTree: Sendable {
    func child(named name: [UInt8], of parent: FileID) async throws(ContainerProtocolError) -> RemoteEntry?
    func children(of parent: FileID, after: [UInt8]?, limit: Int) async throws(ContainerProtocolError)
        -> [RemoteEntry]
}

/// The page sizes `ContainerTree.children` accepts.
public enum TreePage {
    public static let limits = 1...1000

    /// `limit` if acceptable, else `invalidRequest`.
    public static func size(_ limit: Int) throws(ContainerProtocolError) -> Int {
        guard limits.contains(limit) else {
            throw .invalidRequest(
                "a tree page holds \(limits.lowerBound)...\(limits.upperBound) entries, not \(limit)")
        }
        return limit
    }
}
