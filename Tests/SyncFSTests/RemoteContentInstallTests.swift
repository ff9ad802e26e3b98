import Foundation
import Logging
import SyncBackend
import Synchronization
import TestSupport
import Testing

@testable import SyncFS

/// A remote change whose downloaded content cannot be moved into the cache (a full disk, a lost
/// temporary file) changes nothing in the tree: the node and the state database still agree, the
/// failure is logged, and the change is applied later.
@Suite struct RemoteContentInstallTests {
    static let id = FileID(high: 7, low: 7)
    static let first = EntryState(
        parent: .root, name: Array("notes.txt".utf8), kind: .file, mode: 0o644, mtime: 1_000, size: 3,
        xattrs: [:], manifest: [ChunkRef(hash: ChunkHash(bytes: Array(repeating: 0xA, count: 32))!, length: 3)])

    @Test func contentThatCannotBeInstalledLeavesTheNodeAsItWasAndIsLogged() throws {
        let directory = try TemporaryDirectory()
        let log = CapturedLog()
        var fs = try FileSystemFixture.open(directory.path, logger: log.logger)
        let content = fs.cache.temporaryPath()
        #expect(FileManager.default.createFile(atPath: content, contents: Data("old".utf8)))
        let created = RemoteEntry(id: Self.id, version: 1, isDeleted: false, device: "other", state: Self.first)
        #expect(fs.remoteChanges.applyRemote(created, contentFile: content) == .apply(needsContent: false))
        let ino = try #require(fs.live.transact { $0.node(withID: Self.id)?.ino })

        var second = Self.first
        second.mode = 0o600
        second.mtime = 2_000
        second.size = 5
        second.manifest = [ChunkRef(hash: ChunkHash(bytes: Array(repeating: 0xB, count: 32))!, length: 5)]
        let changed = RemoteEntry(id: Self.id, version: 2, isDeleted: false, device: "other", state: second)
        let missing = directory.path + "/no-such-download"
        #expect(fs.remoteChanges.applyRemote(changed, contentFile: missing) == .later)

        let inMemory = try #require(fs.live.transact { $0.nodes[ino]?.record })
        #expect(inMemory.mode & 0o7777 == 0o644, "the new mode was applied without the new content")
        #expect(inMemory.mtime == 1_000, "the new mtime was applied without the new content")
        #expect(inMemory.size == 3)
        #expect(log.lines.contains { $0.contains("cannot install the downloaded content of notes.txt") })

        try fs.shutDown()
        fs = try FileSystemFixture.open(directory.path)
        let onDisk = try #require(fs.live.transact { $0.node(withID: Self.id)?.record })
        #expect(onDisk.mode == inMemory.mode && onDisk.mtime == inMemory.mtime && onDisk.size == inMemory.size)
        try fs.shutDown()
    }
}

/// Every line logged through `logger`, for tests that look for one.
final class CapturedLog: Sendable {
    private let captured = Mutex<[String]>([])

    var lines: [String] { captured.withLock { $0 } }

    var logger: Logger {
        Logger(label: "syncfs-tests") { _ in CapturingHandler(log: self) }
    }

    fileprivate func append(_ line: String) { captured.withLock { $0.append(line) } }
}

private struct CapturingHandler: LogHandler {
    let log: CapturedLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) { log.append("\(event.level) \(event.message)") }
}
