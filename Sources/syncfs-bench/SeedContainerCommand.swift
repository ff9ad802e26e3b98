import ArgumentParser
import Dispatch
import Foundation
import Glibc
import SyncBackend
import SyncFS
import Synchronization

/// `syncfs-bench seed-container SOURCE CONTAINER`: copies a local directory tree into a
/// local container through the `Container` API, as the sync engine's uploader would (chunks cut by
/// `FileChunker`, encoded by `ChunkEncoder`, only missing chunks put, one commit per entry), without
/// a mount. For benchmarks that need a container holding many files (the placeholder benchmark,
/// scripts/bench/placeholders.py). Prints one JSON line:
///
///     {"directories":…,"files":…,"symlinks":…,"bytes":…,"chunks_put":…,"seconds":…}
///
/// Directories are committed first, parents before children, one at a time; files and symlinks
/// then by `--jobs` threads at once. Each commit is its own transaction in the container (durable:
/// on a disk that is one fsync each, so seeding many files is fastest on tmpfs, copied afterwards).
/// Owners, xattrs and special files are skipped. SOURCE's root becomes the container's root; the
/// container must not already hold entries with the same names.
struct SeedContainerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-container",
        abstract: "Copy a directory tree into a local container without mounting (benchmarks)."
    )

    @Argument(help: "The directory tree to copy.")
    var source: String

    @Argument(help: "The local container (created if missing or empty).")
    var container: String

    @Option(help: "Files committed at once.")
    var jobs: Int = 4

    @Option(help: "zlib level of the chunks, 0...9.")
    var level: Int32 = 1

    func validate() throws {
        if jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if !(0...9).contains(level) { throw ValidationError("--level must be 0...9") }
    }

    /// One entry of SOURCE to commit.
    private struct Item: Sendable {
        var path: String
        var id: FileID
        var parent: FileID
        var name: [UInt8]
        var kind: NodeKind
        var mode: UInt32
        var mtime: Int64
    }

    func run() throws {
        let target: LocalContainer
        do {
            target = try LocalContainer.openOrCreate(at: container)
        } catch {
            throw failure("cannot open the container \(container): \(error)")
        }
        do {
            try seedAll(into: target)
        } catch {
            throw failure("\(error)")
        }
    }

    /// Commits the directories, then the files and symlinks; prints the totals.
    private func seedAll(into target: LocalContainer) throws {
        let start = ContinuousClock.now
        var directories: [Item] = []
        var leaves: [Item] = []
        try walk(source, id: .root, directories: &directories, leaves: &leaves)
        let device = "seed-" + FileID.random().hex
        var totals = Totals()
        for item in directories {
            let state = EntryState(
                parent: item.parent, name: item.name, kind: .directory, mode: item.mode, mtime: item.mtime, size: 0)
            try commit(item, state: state, device: device, in: target)
        }
        totals.directories = directories.count
        // Plain threads (each blocks on its container calls), taking files in turn.
        let work = SharedWork()
        let workers = (0..<min(jobs, max(1, leaves.count))).map { _ in
            Worker.start("syncfs-seed") { [leaves, level, self] _ in
                let encoder = ChunkEncoder(level: level)
                var local = Totals()
                while true {
                    let index = work.next.add(1, ordering: .relaxed).oldValue
                    guard index < leaves.count, work.state.withLock({ $0.error == nil }) else { break }
                    do {
                        try seed(leaves[index], device: device, encoder: encoder, in: target, totals: &local)
                    } catch {
                        work.state.withLock { $0.error = $0.error ?? "\(error)" }
                    }
                }
                work.state.withLock { $0.totals.add(local) }
            }
        }
        for worker in workers { worker.join() }
        let (leafTotals, error) = work.state.withLock { ($0.totals, $0.error) }
        if let error { throw SeedError(error) }
        totals.add(leafTotals)
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        print(
            "{\"directories\":\(totals.directories),\"files\":\(totals.files),\"symlinks\":\(totals.symlinks),"
                + "\"bytes\":\(totals.bytes),\"chunks_put\":\(totals.chunksPut),"
                + "\"seconds\":\(String(format: "%.3f", seconds))}")
    }

    /// What the worker threads share: the next file to take, their totals, the first error.
    private final class SharedWork: Sendable {
        let next = Atomic<Int>(0)
        let state = Mutex<(totals: Totals, error: String?)>((Totals(), nil))
    }

    /// A failure with its message (printed once, by `run`).
    private struct SeedError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private struct Totals: Sendable {
        var directories = 0
        var files = 0
        var symlinks = 0
        var bytes: Int64 = 0
        var chunksPut = 0

        mutating func add(_ other: Totals) {
            directories += other.directories
            files += other.files
            symlinks += other.symlinks
            bytes += other.bytes
            chunksPut += other.chunksPut
        }
    }

    /// Lists `path`'s entries: directories (parents first) and everything else.
    private func walk(_ path: String, id: FileID, directories: inout [Item], leaves: inout [Item]) throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw SeedError("cannot list \(path): \(error.localizedDescription)")
        }
        var subdirectories: [(String, FileID)] = []
        for name in names {
            let child = path + "/" + name
            var info = stat()
            guard lstat(child, &info) == 0 else {
                throw SeedError("cannot stat \(child): \(String(cString: strerror(errno)))")
            }
            let kind: NodeKind
            switch info.st_mode & S_IFMT {
            case S_IFDIR: kind = .directory
            case S_IFREG: kind = .file
            case S_IFLNK: kind = .symlink
            default: continue
            }
            let item = Item(
                path: child, id: .random(), parent: id, name: Array(name.utf8), kind: kind,
                mode: UInt32(info.st_mode) & 0o7777,
                mtime: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
            if kind == .directory {
                directories.append(item)
                subdirectories.append((child, item.id))
            } else {
                leaves.append(item)
            }
        }
        for (child, childID) in subdirectories {
            try walk(child, id: childID, directories: &directories, leaves: &leaves)
        }
    }

    /// Uploads one file's chunks (those missing) or reads a symlink, then commits it.
    private func seed(
        _ item: Item, device: String, encoder: ChunkEncoder, in target: LocalContainer, totals: inout Totals
    ) throws {
        var state = EntryState(
            parent: item.parent, name: item.name, kind: item.kind, mode: item.mode, mtime: item.mtime, size: 0)
        if item.kind == .symlink {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = buffer.withUnsafeMutableBufferPointer { readlink(item.path, $0.baseAddress!, $0.count) }
            guard count >= 0 else { throw SeedError("cannot read the link \(item.path)") }
            state.symlinkTarget = buffer[..<count].map { UInt8(bitPattern: $0) }
            try commit(item, state: state, device: device, in: target)
            totals.symlinks += 1
            return
        }
        let descriptor = open(item.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw SeedError("cannot open \(item.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SeedError("cannot stat \(item.path)") }
        var batch: [EncodedChunk] = []
        var manifest: [ChunkRef] = []
        var put = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            let pending = batch
            batch = []
            let hashes = pending.map(\.hash)
            let missing = Set(
                try Blocking.run { () async throws(ContainerProtocolError) in try await target.missingChunks(hashes) })
            var sent = Set<ChunkHash>()
            for chunk in pending where missing.contains(chunk.hash) && sent.insert(chunk.hash).inserted {
                try Blocking.run { () async throws(ContainerProtocolError) in try await target.putChunk(chunk) }
                put += 1
            }
        }
        try FileChunker.forEachChunk(of: descriptor, length: Int64(info.st_size)) { bytes in
            let chunk = encoder.encode(bytes)
            manifest.append(ChunkRef(hash: chunk.hash, length: Int64(chunk.plainLength)))
            batch.append(chunk)
            if batch.count >= 16 { try flush() }
        }
        try flush()
        state.size = Int64(info.st_size)
        state.manifest = manifest
        try commit(item, state: state, device: device, in: target)
        totals.files += 1
        totals.bytes += state.size
        totals.chunksPut += put
    }

    private func commit(_ item: Item, state: EntryState, device: String, in target: LocalContainer) throws {
        let request = CommitRequest(id: item.id, baseVersion: 0, change: .put(state), device: device)
        let outcome = try Blocking.run { () async throws(ContainerProtocolError) in try await target.commit(request) }
        guard case .committed = outcome else { throw SeedError("the container refused \(item.path): \(outcome)") }
    }

    private func failure(_ message: String) -> ExitCode {
        printError("syncfs-bench seed-container: \(message)")
        return .failure
    }
}
