import Foundation
import Glibc
import SyncBackend
import SyncBackendTesting
import TestSupport
import Testing

@testable import SyncFS

/// One folder following a `HostileContainer`, with the inotify echo on, aimed at a plain
/// directory `TMP/mnt` beside a sentinel tree `TMP/sentinel` (both in the test's own temporary
/// directory): without FUSE every echo call is a real system call on the host, so a remote name
/// that leaves the folder (`..`, `a/../b`) would reach the sentinel, exactly as through a root
/// mount. Hostile entries only ever aim at `TMP/sentinel` (`mnt/..` is `TMP`).
final class HostileFixture {
    let temporary: TemporaryDirectory
    let container = HostileContainer()
    let folder: FileSystemFixture
    let engine: SyncEngine

    var mountpoint: String { temporary.path + "/mnt" }
    var sentinel: String { temporary.path + "/sentinel" }
    /// What the sentinel tree (and everything else in TMP but `mnt`) looked like at the start.
    let before: [String: String]

    init(echo: Bool = true) throws {
        temporary = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: temporary.path + "/mnt", withIntermediateDirectories: false)
        try SentinelTree.create(at: temporary.path + "/sentinel")
        before = SentinelTree.snapshot(of: temporary.path, skipping: "mnt")
        folder = try FileSystemFixture(uploadPolicy: SyncedPair.fastPolicy)
        if echo { folder.fs.echo.channel.start(mountpoint: temporary.path + "/mnt", timeout: 1) }
        engine = SyncedPair.engine(folder, container)
        engine.start()
    }

    deinit {
        engine.stop()
        folder.fs.echo.channel.stop()
    }

    /// A file committed the honest way (through `base`'s rules), with its chunk stored.
    @discardableResult
    func commitGoodFile(_ name: String, _ content: [UInt8], in parent: FileID = .root) async throws -> FileID {
        let id = FileID.random()
        let chunk = content.withUnsafeBytes { ChunkCodec.encode($0) }
        try await container.putChunk(chunk)
        let outcome = try await container.commit(
            CommitRequest(
                id: id, baseVersion: 0,
                change: .put(
                    EntryState(
                        parent: parent, name: Array(name.utf8), kind: .file, mode: 0o644, mtime: 1,
                        size: Int64(content.count),
                        manifest: content.isEmpty ? [] : [ChunkRef(hash: chunk.hash, length: Int64(content.count))])),
                device: "good"))
        guard case .committed = outcome else { throw HostileTestFailure("commit of \(name): \(outcome)") }
        return id
    }

    /// A directory committed the honest way.
    @discardableResult
    func commitGoodDirectory(_ name: String, in parent: FileID = .root) async throws -> FileID {
        let id = FileID.random()
        let outcome = try await container.commit(
            CommitRequest(
                id: id, baseVersion: 0,
                change: .put(
                    EntryState(parent: parent, name: Array(name.utf8), kind: .directory, mode: 0o755, mtime: 1, size: 0)
                ),
                device: "good"))
        guard case .committed = outcome else { throw HostileTestFailure("commit of \(name): \(outcome)") }
        return id
    }

    /// Stores `content` as a chunk and returns its reference (length as declared, or the true one).
    func storeChunk(_ content: [UInt8], declaring length: Int64? = nil) async throws -> ChunkRef {
        let chunk = content.withUnsafeBytes { ChunkCodec.encode($0) }
        try await container.putChunk(chunk)
        return ChunkRef(hash: chunk.hash, length: length ?? Int64(content.count))
    }

    /// Commits `after.txt` honestly and waits until the folder shows it with its content: the
    /// feed went on past whatever was injected before.
    func expectTheFeedGoesOn(_ name: String = "after.txt") async throws {
        let content = Array("still syncing \(name)\n".utf8)
        try await commitGoodFile(name, content)
        try await eventually("\(name) arrives after the hostile entries") { try folder.childNames().contains(name) }
        #expect(try await read(name) == content)
    }

    /// The content of a file by path, read on a thread of its own: reading a placeholder blocks
    /// its thread on a download (`Blocking.run`), which on the cooperative pool (two threads on
    /// a two-core machine, tests of other suites beside) could leave no thread to run it.
    func read(_ path: String) async throws -> [UInt8] {
        try await offThePool { [folder = Unchecked(folder)] in try contents(folder.value, path) }
    }

    /// Runs `body` on a new thread and returns its result (see `read`).
    func offThePool<T>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Unchecked<T>, Error>) in
            Thread { continuation.resume(with: Result { Unchecked(try body()) }) }.start()
        }
        return result.value
    }

    /// The file IDs (hex) `status` lists as refused.
    var refusedIDs: Set<String> { Set(engine.status().refusedRemoteEntries.map(\.fileID)) }

    /// Expects `id` to be listed as refused, with a reason and the served version.
    func expectRefused(_ served: RemoteEntry, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let refusal = engine.status().refusedRemoteEntries.first { $0.fileID == served.id.hex }
        #expect(refusal != nil, "\(what) is listed in status as refused", sourceLocation: sourceLocation)
        if let refusal {
            #expect(refusal.version == served.version, sourceLocation: sourceLocation)
            #expect(!refusal.reason.isEmpty, sourceLocation: sourceLocation)
        }
    }

    /// Everything in TMP but the echo's directory is as it was at the start.
    func expectNothingOutsideChanged(sourceLocation: SourceLocation = #_sourceLocation) {
        let after = SentinelTree.snapshot(of: temporary.path, skipping: "mnt")
        #expect(
            after == before, "outside the folder: \(SentinelTree.difference(before, after))",
            sourceLocation: sourceLocation)
    }

    /// Whether the folder holds a live node for `id` (whatever its name, `..` included).
    func isLocal(_ id: FileID) -> Bool {
        folder.fs.live.transact { tree in tree.node(withID: id).map { !$0.isUnlinked } ?? false }
    }

    /// The folder's names, recursively ("d/f"), through readdir.
    func localPaths(_ directory: InodeNumber = .root, prefix: String = "") throws -> [String] {
        var paths: [String] = []
        for name in try folder.childNames(of: directory) {
            paths.append(prefix + name)
            let ino = try folder.lookupIno(name, in: directory)
            if try folder.fs.getattr(ino).kind == .directory {
                paths += try localPaths(ino, prefix: prefix + name + "/")
            }
        }
        return paths
    }
}

/// A value handed to another thread whose use there the test orders itself.
struct Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

struct HostileTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A small tree a hostile container aims at, and a fingerprint of a directory: per path (lstat,
/// no link followed) its kind, permission bits (setuid/setgid included), size, content hash and
/// link target.
enum SentinelTree {
    static let victimContent = Array("the sentinel's own bytes; a hostile container must not touch them\n".utf8)

    /// `victim.txt` (0644), `doomed.txt` (0600), `sub/inner.txt` (0640), `link` -> `victim.txt`.
    static func create(at path: String) throws {
        try FileManager.default.createDirectory(atPath: path + "/sub", withIntermediateDirectories: true)
        for (name, mode) in [("victim.txt", 0o644), ("doomed.txt", 0o600), ("sub/inner.txt", 0o640)] {
            let file = path + "/" + name
            guard FileManager.default.createFile(atPath: file, contents: Data(victimContent + Array(name.utf8))) else {
                throw HostileTestFailure("cannot create \(file)")
            }
            chmod(file, mode_t(mode))
        }
        try FileManager.default.createSymbolicLink(atPath: path + "/link", withDestinationPath: "victim.txt")
    }

    /// The fingerprint of everything below `root`, except its child `skipping`.
    static func snapshot(of root: String, skipping: String) -> [String: String] {
        var result: [String: String] = [:]
        var stack = [""]
        while let relative = stack.popLast() {
            let path = relative.isEmpty ? root : root + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            var line = "mode \(String(info.st_mode, radix: 8)) size \(info.st_size) uid \(info.st_uid)"
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                let data = FileManager.default.contents(atPath: path).map { Array($0) } ?? []
                line += " content \(data.withUnsafeBytes { ChunkCodec.hash($0) })"
            case S_IFLNK:
                line += " target \((try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?")"
            case S_IFDIR:
                for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                where !(relative.isEmpty && name == skipping) {
                    stack.append(relative.isEmpty ? name : relative + "/" + name)
                }
            default:
                break
            }
            result[relative.isEmpty ? "." : relative] = line
        }
        return result
    }

    /// The paths whose fingerprints differ (for the failure message).
    static func difference(_ before: [String: String], _ after: [String: String]) -> String {
        let paths = Set(before.keys).union(after.keys).sorted().filter { before[$0] != after[$0] }
        return paths.map { "\($0): \(before[$0] ?? "absent") -> \(after[$0] ?? "absent")" }.joined(separator: "; ")
    }
}
