import Foundation
import Glibc
import Logging
import SyncBackend
import TestSupport
import Testing

@testable import SyncFS

/// The caller every test acts as (ids chosen to differ from the test process's own).
let testCaller = Caller(uid: 1234, gid: 5678)

/// A `SyncFileSystem` over a temporary state directory (`state.db` + `cache/`), as the daemon
/// builds it, without FUSE. `reopen()` shuts it down and builds a new one over the same state.
final class FileSystemFixture {
    let directory: TemporaryDirectory
    private(set) var fileSystem: SyncFileSystem
    private var isShutDown = false

    var databasePath: String { directory.path + "/state.db" }
    var cachePath: String { directory.path + "/cache" }

    let uploadPolicy: UploadQueue.Policy
    /// How long the store's flusher gathers a batch (`MetadataStore`); `slowBatchDelay` keeps
    /// what a test looks at uncommitted unless something commits it at once.
    let batchDelay: Duration

    init(uploadPolicy: UploadQueue.Policy = .standard, batchDelay: Duration = .milliseconds(5)) throws {
        self.uploadPolicy = uploadPolicy
        self.batchDelay = batchDelay
        directory = try TemporaryDirectory()
        fileSystem = try Self.open(directory.path, uploadPolicy: uploadPolicy, batchDelay: batchDelay)
    }

    deinit {
        if !isShutDown {
            expectCountsAgreeWithWalk()
            try? fileSystem.shutDown()
        }
    }

    static func open(
        _ statePath: String, uploadPolicy: UploadQueue.Policy = .standard, batchDelay: Duration = .milliseconds(5),
        logger: Logger = Logger(label: "syncfs-tests")
    ) throws -> SyncFileSystem {
        let store = try MetadataStore(path: statePath + "/state.db", batchDelay: batchDelay)
        let cache = try ContentCache(directory: statePath + "/cache")
        return try SyncFileSystem(
            store: store, cache: cache, statePath: statePath, logger: logger,
            uploadPolicy: uploadPolicy)
    }

    /// Commits and closes the current file system (as at unmount); `body` may then change the
    /// state directory (as a crash would); then a new file system is loaded from it.
    func reopen(afterShutDown body: () throws -> Void = {}) throws {
        try shutDown()
        try body()
        fileSystem = try Self.open(directory.path, uploadPolicy: uploadPolicy, batchDelay: batchDelay)
        isShutDown = false
    }

    /// Before each shutdown (and so each `reopen`, and at the end of a test), the counts `status` answers from must equal
    /// a walk of the tree (`TreeCounts`).
    func shutDown() throws {
        isShutDown = true
        expectCountsAgreeWithWalk()
        try fileSystem.shutDown()
    }

    func expectCountsAgreeWithWalk(sourceLocation: SourceLocation = #_sourceLocation) {
        let disagreement = fileSystem.residency.countsDisagreement()
        #expect(
            disagreement == nil, "the tree's counts differ from a walk: \(String(describing: disagreement))",
            sourceLocation: sourceLocation)
    }

    // MARK: Shortcuts

    var fs: SyncFileSystem { fileSystem }

    @discardableResult
    func mkdir(_ name: String, in parent: InodeNumber = .root, mode: UInt32 = 0o755) throws -> InodeNumber {
        try fs.mkdir(parent: parent, name: FileName(name), mode: mode, caller: testCaller).attributes.ino
    }

    /// Creates a file, optionally writes `contents`, and closes it (flush + release).
    @discardableResult
    func makeFile(_ name: String, in parent: InodeNumber = .root, contents: [UInt8] = []) throws -> InodeNumber {
        let (reply, handle) = try fs.opener.create(
            parent: parent, name: FileName(name), mode: 0o644, flags: O_CREAT | O_RDWR, caller: testCaller)
        if !contents.isEmpty { try write(handle, contents, at: 0) }
        fs.fileIO.release(handle)
        return reply.attributes.ino
    }

    func write(_ handle: OpenFile, _ bytes: [UInt8], at offset: Int64, as caller: Caller = testCaller) throws {
        let written = try bytes.withUnsafeBytes { buffer throws(FSError) in
            try fs.fileIO.write(handle, buffer.baseAddress!, count: buffer.count, offset: offset, caller: { caller })
        }
        #expect(written == bytes.count)
    }

    func lookupIno(_ name: String, in parent: InodeNumber = .root) throws -> InodeNumber {
        try fs.lookup(parent: parent, name: FileName(name)).attributes.ino
    }

    /// The stable file ID of a live node (internal state).
    func fileID(of ino: InodeNumber) -> FileID? {
        fs.live.transact { $0.nodes[ino]?.fileID }
    }

    /// Whether the node is still held in memory (linked or not).
    func isLoaded(_ ino: InodeNumber) -> Bool {
        fs.live.transact { $0.nodes[ino] != nil }
    }

    func cacheFilePath(of ino: InodeNumber) -> String? {
        fileID(of: ino).map { fs.cache.path(for: $0) }
    }

    /// The bytes of the node's cache file, read from disk.
    func cacheContents(of ino: InodeNumber) -> [UInt8]? {
        guard let path = cacheFilePath(of: ino), let data = FileManager.default.contents(atPath: path) else {
            return nil
        }
        return Array(data)
    }

    /// Sorted child names of a directory, through opendir/readdir (without `.` and `..`).
    func childNames(of directory: InodeNumber = .root) throws -> [String] {
        let handle = try fs.listings.opendir(directory)
        defer { fs.listings.releasedir(handle) }
        return try fs.listings.readdir(handle, offset: 0).map(\.name.description).filter { $0 != "." && $0 != ".." }
    }
}

/// Reads `count` bytes at `offset` from a descriptor.
func readBytes(_ descriptor: Int32, count: Int, at offset: Int64) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: count)
    let read = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, count, off_t(offset)) }
    return read < 0 ? [] : Array(buffer.prefix(read))
}

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Runs a blocking wait (a socket read with a timeout, a SQLite busy wait, a flusher's delay) on a
/// thread of its own and returns its result: a test that waits for seconds must not hold one of Swift's cooperative threads (two on
/// this machine), which the other tests' async waits need — holding one for ~10 s starved a
/// conflict-race test into missing a short-lived version.
func waiting<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

extension SyncFileSystem {
    /// The follower's side of this tree, made on demand (it holds only references).
    var remoteChanges: RemoteChanges { RemoteChanges(fileSystem: self) }
    /// The conflicts of this tree, made on demand as the engine makes them.
    var conflictsView: Conflicts { Conflicts(fileSystem: self, remote: remoteChanges) }
}
