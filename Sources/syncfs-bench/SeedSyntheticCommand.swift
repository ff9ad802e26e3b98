import ArgumentParser
import Foundation
import SyncBackend
import SyncFS

/// `syncfs-bench seed-synthetic CONTAINER --dirs D --files-per-dir F`: fills a new
/// local container with `D` directories under the root, each holding `F` tiny files, for the
/// 1,000,000-entry benchmark (scripts/bench/million.py). Prints one JSON line:
///
///     {"directories":…,"files":…,"chunks_put":…,"version":…,"seconds":…}
///
/// The entries are the ones `seed-container` would commit for the same tree (versions 1, 2, …
/// in order, directories first, one device, each file's content one of `--contents` distinct
/// small texts, so the chunks are put once and deduplicated), but written with the container's
/// import (`ImportableContainer`, 10,000 entries per transaction) instead of one durable
/// commit per entry: ~100 times faster, the same container. The container must be new or
/// empty (its counter is the last version written here).
struct SeedSyntheticCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-synthetic",
        abstract: "Fill a new local container with many tiny files without mounting (benchmarks)."
    )

    @Argument(help: "The local container (created if missing or empty).")
    var container: String

    @Option(help: "Directories under the root.")
    var dirs: Int = 1000

    @Option(name: .customLong("files-per-dir"), help: "Files in each directory.")
    var filesPerDir: Int = 1000

    @Option(help: "Distinct file contents (tiny texts, deduplicated).")
    var contents: Int = 16

    /// Entries per import transaction.
    static let batch = 10_000

    func validate() throws {
        guard (1...100_000).contains(dirs) else { throw ValidationError("--dirs must be 1...100000") }
        guard (0...1_000_000).contains(filesPerDir) else {
            throw ValidationError("--files-per-dir must be 0...1000000")
        }
        guard (1...4096).contains(contents) else { throw ValidationError("--contents must be 1...4096") }
    }

    func run() throws {
        let start = ContinuousClock.now
        let target: LocalContainer
        do {
            target = try LocalContainer.openOrCreate(at: container)
        } catch {
            throw fail("cannot open the container \(container): \(error)")
        }
        do {
            let result = try Blocking.run { () async throws(ContainerProtocolError) in try await seed(into: target) }
            let elapsed = (ContinuousClock.now - start).components
            let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
            print(
                "{\"directories\":\(dirs),\"files\":\(dirs * filesPerDir),\"chunks_put\":\(contents),"
                    + "\"version\":\(result),\"seconds\":\(String(format: "%.3f", seconds))}")
        } catch {
            throw fail("\(error)")
        }
    }

    /// Puts the chunks, imports every entry; the last version written.
    private func seed(into target: LocalContainer) async throws(ContainerProtocolError) -> EntryVersion {
        let encoder = ChunkEncoder(level: 1)
        var manifests: [[ChunkRef]] = []
        for index in 0..<contents {
            let chunk = Array("synthetic content \(index)\n".utf8).withUnsafeBytes { encoder.encode($0) }
            try await target.putChunk(chunk)
            manifests.append([ChunkRef(hash: chunk.hash, length: Int64(chunk.plainLength))])
        }
        let device = "seed-" + FileID.random().hex
        let mtime = Int64(Date().timeIntervalSince1970) * 1_000_000_000
        var version: EntryVersion = 0
        var pending: [RemoteEntry] = []
        func add(_ id: FileID, _ state: EntryState) async throws(ContainerProtocolError) {
            version += 1
            pending.append(RemoteEntry(id: id, version: version, isDeleted: false, device: device, state: state))
            if pending.count >= Self.batch {
                try await target.importEntries(pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
        let directories = (0..<dirs).map { _ in FileID.random() }
        for (index, id) in directories.enumerated() {
            try await add(
                id,
                EntryState(
                    parent: .root, name: Array(String(format: "d%05d", index).utf8), kind: .directory, mode: 0o755,
                    mtime: mtime, size: 0))
        }
        for (index, parent) in directories.enumerated() {
            for file in 0..<filesPerDir {
                let manifest = manifests[(index &+ file) % contents]
                try await add(
                    .random(),
                    EntryState(
                        parent: parent, name: Array(String(format: "f%06d.txt", file).utf8), kind: .file,
                        mode: 0o644, mtime: mtime, size: manifest[0].length, manifest: manifest))
            }
        }
        if !pending.isEmpty { try await target.importEntries(pending) }
        return version
    }

    private func fail(_ message: String) -> ExitCode {
        printError("syncfs-bench seed-synthetic: \(message)")
        return .failure
    }
}
