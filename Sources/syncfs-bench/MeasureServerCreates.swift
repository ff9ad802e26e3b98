import Foundation
import SyncBackend
import SyncClient
import SyncFS

/// `measure-server URL --token-file FILE --create N`: commits `N` new empty files to
/// the container with `--clients` concurrent clients — a new directory under the root
/// (`created-<random>`), then subdirectories of at most 1,000 files each — and prints one JSON
/// line `{"created":N,"directories":…,"seconds":…,"last":"created-…/cK/nM"}` (`last`: the path of
/// the file committed last, the highest version: a mount that shows it has applied them all). For the feed catch-up of
/// scripts/bench/million.py: `N` distinct entries in the change feed, as another client adding
/// files would make them. Every commit must succeed.
enum MeasureServerCreates {
    /// Files per subdirectory.
    static let filesPerDirectory = 1000

    static func run(_ container: HTTPContainer, count: Int, clients: Int) async throws -> String {
        let start = ContinuousClock.now
        let device = "measure-server-" + FileID.random().hex.prefix(8)
        let top = FileID.random()
        let topName = "created-\(top.hex.prefix(8))"
        _ = try await commit(container, id: top, name: topName, parent: .root, kind: .directory, device: device)
        let directories = (count + filesPerDirectory - 1) / filesPerDirectory
        let parents = (0..<directories).map { _ in FileID.random() }
        for (index, id) in parents.enumerated() {
            _ = try await commit(container, id: id, name: "c\(index)", parent: top, kind: .directory, device: device)
        }
        let next = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    while true {
                        let index = await next.take()
                        guard index < count else { return }
                        let version = try await commit(
                            container, id: .random(), name: "n\(index)",
                            parent: parents[index / filesPerDirectory], kind: .file, device: device)
                        await next.committed(index, version: version)
                    }
                }
            }
            try await group.waitForAll()
        }
        let (seconds, fraction) = (ContinuousClock.now - start).components
        let elapsed = Double(seconds) + Double(fraction) / 1e18
        let last = await next.last
        return "{\"created\":\(count),\"directories\":\(directories + 1),"
            + "\"seconds\":\(String(format: "%.3f", elapsed)),"
            + "\"last\":\"\(topName)/c\(last / filesPerDirectory)/n\(last)\"}"
    }

    private actor Counter {
        var value = 0
        /// The index of the file committed with the highest version.
        var last = 0
        private var lastVersion: EntryVersion = 0
        func take() -> Int {
            defer { value += 1 }
            return value
        }
        func committed(_ index: Int, version: EntryVersion) {
            if version > lastVersion { (last, lastVersion) = (index, version) }
        }
    }

    private static func commit(
        _ container: HTTPContainer, id: FileID, name: String, parent: FileID, kind: NodeKind, device: String
    ) async throws -> EntryVersion {
        let state = EntryState(
            parent: parent, name: Array(name.utf8), kind: kind, mode: kind == .directory ? 0o755 : 0o644,
            mtime: Int64(Date().timeIntervalSince1970) * 1_000_000_000, size: 0)
        let request = CommitRequest(id: id, baseVersion: 0, change: .put(state), device: device)
        while true {
            let outcome: CommitOutcome
            do throws(ContainerProtocolError) {
                outcome = try await container.commit(request)
            } catch {
                guard error.isRetryable else { throw error }
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            guard case .committed(let entry) = outcome else {
                throw MeasureFailure("the server refused \(name): \(outcome)")
            }
            return entry.version
        }
    }

    struct MeasureFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
