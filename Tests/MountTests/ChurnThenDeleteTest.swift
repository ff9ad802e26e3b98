import Foundation
import Glibc
import TestSupport
import Testing

/// Deletes stay deleted: after heavy concurrent churn on one mount (several
/// threads making, moving and removing chains of nested folders and files, racing the uploads)
/// and an `rm -rf` of the whole tree, the folder must stay empty — nothing re-created by the
/// daemon a moment later —, `sync` must empty the queue, the other mount must become empty, and a
/// fresh mount of the container (a new state directory) must be empty once it has caught up.
/// The reported failure re-created a chain of nested folders ~0.3 s after a successful `rm -rf`
/// and never sent its deletion.
///
/// The operation streams are reproducible from the seed, their interleaving is the machine's.
/// `SYNCFS_CHURN_SEED=<seed>[,<seed>…]` (decimal or 0x-hex) runs those seeds (else two default
/// ones), `SYNCFS_CHURN_OPS=<n>` sets the operations per seed (all workers together; default
/// 6000). On by default; `SYNCFS_CHURN=0` skips it.
@Suite(.serialized, .enabled(if: churnTestRequested, "skipped with SYNCFS_CHURN=0"))
struct ChurnThenDeleteTest {
    static let seeds: [UInt64] = {
        let text = ProcessInfo.processInfo.environment["SYNCFS_CHURN_SEED"] ?? ""
        let parsed = text.split(separator: ",").compactMap { part -> UInt64? in
            let value = part.trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("0x") || value.hasPrefix("0X") { return UInt64(value.dropFirst(2), radix: 16) }
            return UInt64(value)
        }
        return parsed.isEmpty ? [0xDE1E7E, 0x5EED_0014] : parsed
    }()

    static let opCount = Int(ProcessInfo.processInfo.environment["SYNCFS_CHURN_OPS"] ?? "") ?? 6000
    static let workerCount = 4

    /// The same churn and removal on a plain directory: the assertions' baseline.
    @Test func aPlainDirectoryIsEmptyAfterChurnAndRemoval() throws {
        let folder = try TestFolder.make(.plain)
        defer { folder.tearDown() }
        let workers = Self.churn(folder.root, seed: Self.seeds[0])
        #expect(workers.map(\.succeeded).reduce(0, +) > Self.opCount / 5, "the churn mostly did something")
        let removal = Self.removeEverything(in: folder.root)
        #expect(removal.ok, "\(removal) \(removal.stderr)")
        #expect(Self.entries(below: folder.root).isEmpty)
    }

    @Test(arguments: seeds)
    func deletedFoldersStayDeletedAfterChurn(seed: UInt64) throws {
        let seedText = "SYNCFS_CHURN_SEED=0x" + String(seed, radix: 16)
        try SyncedMounts.with(uploadDelay: 10, argumentsA: MassDeleteGuardTest.neverTrips) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            let workers = Self.churn(a.root, seed: seed)
            let succeeded = workers.map(\.succeeded).reduce(0, +)
            #expect(succeeded > Self.opCount / 5, "\(seedText): the churn mostly did something (\(succeeded) ok)")
            let removal = Self.removeEverything(in: a.root)
            if !removal.ok { Issue.record("\(seedText): \(Self.summary(workers))\n\(mounts.logs(limit: 6000))") }
            try #require(removal.ok, "\(seedText): \(removal) \(removal.stderr)")
            #expect(Self.entries(below: a.root).isEmpty, "\(seedText): rm -rf left entries")

            // Nothing comes back on A while its uploads finish (the reported chain came back
            // ~0.3 s after the removal), nor after `sync`.
            var cameBack: [String] = []
            let watchUntil = Date().addingTimeInterval(3)
            while Date() < watchUntil && cameBack.isEmpty {
                cameBack = Self.entries(below: a.root)
                usleep(50_000)  // scenario: a 3 s watch for a change that must not come
            }
            #expect(cameBack.isEmpty, "\(seedText): re-created on A after rm -rf: \(cameBack.prefix(20))")
            #expect(a.expectSync(timeout: 120), "\(seedText)")
            let afterSync = Self.entries(below: a.root)
            #expect(afterSync.isEmpty, "\(seedText): on A after sync: \(afterSync.prefix(20))")
            let status = try a.syncStatus()
            #expect(
                status.pendingEntries == 0 && status.failing.isEmpty,
                "\(seedText): A's queue after sync: \(status.pendingEntries) pending, failing \(status.failing)")

            // The other mount follows the deletion.
            var leftOnB: [String] = []
            let emptyOnB = waitUntil(timeout: 60) {
                leftOnB = Self.entries(below: b.root)
                return leftOnB.isEmpty
            }
            #expect(emptyOnB, "\(seedText): left on B: \(leftOnB.prefix(20))")

            // A fresh mount of the container, once caught up, is empty too.
            let fresh = try TestFolder.make(
                .mount, sharedContainer: mounts.containerPath, mountArguments: ["--upload-delay", "10"])
            defer { fresh.tearDown() }
            let caughtUp = waitUntil(timeout: 60) { (try? fresh.syncStatus().feedCaughtUp) == true }
            #expect(caughtUp, "\(seedText): the fresh mount caught up")
            let onFresh = Self.entries(below: fresh.root)
            #expect(onFresh.isEmpty, "\(seedText): a fresh mount shows \(onFresh.prefix(20))")
            if !(cameBack.isEmpty && afterSync.isEmpty && emptyOnB && onFresh.isEmpty) {
                Issue.record("\(seedText): \(Self.summary(workers))\n\(mounts.logs(limit: 6000))")
            }
        }
    }

    /// A chain of folders, each changed (a `chmod`) and then removed with `rm -rf` before the
    /// upload: every folder's queued change predates the deletes of what is in it, so the
    /// uploader meets the outermost delete first and the container refuses it (it still holds
    /// the next folder). The chain must stay deleted on A and leave B. It came back on every
    /// machine: the refused deletes spent their waiting rounds and gave way to the container.
    @Test func aDeletedChainWhoseFoldersChangedFirstStaysDeleted() throws {
        try SyncedMounts.with(uploadDelay: 1000, argumentsA: MassDeleteGuardTest.neverTrips) { mounts in
            let (a, b) = (mounts.a, mounts.b)
            var chain: [String] = []
            var relative = ""
            for depth in 0..<20 {
                relative += (relative.isEmpty ? "" : "/") + "d\(depth)"
                chain.append(relative)
                try makeDirectory(a.path(relative))
            }
            try writeFile(a.path(relative + "/leaf"), "x")
            try #require(a.expectSync())
            try #require(waitUntil(timeout: 60) { FileManager.default.fileExists(atPath: b.path(relative + "/leaf")) })

            for folder in chain { try #require(chmod(a.path(folder), 0o750) == 0, "chmod \(folder)") }
            let removal = ModelProcess.run(["rm", "-rf", "--", a.path("d0")], timeout: 60)
            try #require(removal.ok, "\(removal) \(removal.stderr)")
            #expect(a.expectSync(timeout: 120))
            let onA = Self.entries(below: a.root)
            #expect(onA.isEmpty, "on A after sync: \(onA.prefix(5))")
            var onB: [String] = []
            let emptyOnB = waitUntil(timeout: 60) {
                onB = Self.entries(below: b.root)
                return onB.isEmpty
            }
            #expect(emptyOnB, "left on B: \(onB.prefix(5))")
            if !onA.isEmpty || !emptyOnB { Issue.record("\(mounts.logs(limit: 6000))") }
        }
    }

    /// Runs the workers on `root` at once; returns them (with their outcomes).
    static func churn(_ root: String, seed: UInt64) -> [ChurnWorker] {
        let workers = (0..<workerCount).map { index in
            ChurnWorker(
                root: root, seed: seed, index: index,
                opCount: opCount / workerCount + (index < opCount % workerCount ? 1 : 0))
        }
        runConcurrently(workers.map { worker in { worker.run() } })
        return workers
    }

    /// `rm -rf` of every entry of `root`.
    static func removeEverything(in root: String) -> ModelProcessResult {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return ModelProcess.run(["rm", "-rf", "--"] + names.map { root + "/" + $0 }, timeout: 120)
    }

    /// Every path below `root` (relative), sorted.
    static func entries(below root: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return ["<cannot list \(root)>"] }
        return walker.compactMap { $0 as? String }.sorted()
    }

    static func summary(_ workers: [ChurnWorker]) -> String {
        var totals: [ChurnOp: [String: Int]] = [:]
        for worker in workers {
            for (kind, outcomes) in worker.outcomes {
                for (outcome, count) in outcomes { totals[kind, default: [:]][outcome, default: 0] += count }
            }
        }
        return totals.sorted { $0.key.rawValue < $1.key.rawValue }.map { kind, outcomes in
            "\(kind.rawValue): "
                + outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }.joined(separator: "; ")
    }
}

/// `ChurnThenDeleteTest` runs unless `SYNCFS_CHURN=0` (a seed given always runs it).
let churnTestRequested: Bool = {
    let environment = ProcessInfo.processInfo.environment
    return environment["SYNCFS_CHURN"] != "0" || !(environment["SYNCFS_CHURN_SEED"] ?? "").isEmpty
}()
