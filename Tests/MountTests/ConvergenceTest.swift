import Foundation
import Glibc
import Testing

/// The seeded randomized convergence test: three mounts of one container, one thread
/// per mount running its own random stream of operations at once (create, append, insert,
/// replace a line, save-by-rename, rename, move, delete, mkdir, rmdir, move and rename folders)
/// over a small shared name space, so that the mounts really conflict; meanwhile one or two
/// mounts at a time lose their container for seconds (`OutageSwitch`). Then heal: every
/// outage ends, each mount runs `syncfs-mount sync`, and the three trees must become identical
/// (names, kinds, modes, sizes, mtimes, contents) with every queue empty, and pass the content
/// oracle of `ConvergenceOracle` (nothing written is lost unless a mount removed it having seen
/// it; no conflict markers; only documented conflict-copy names). It prints the convergence time
/// (heal to identical) and what ran.
///
/// The operation streams are reproducible from the seed; their interleaving, like the outages'
/// timing, is the machine's. `SYNCFS_CONVERGE_SEED=<seed>[,<seed>…]` (decimal or 0x-hex) runs
/// those seeds (else two default ones), `SYNCFS_CONVERGE_OPS=<n>` sets the operations per seed
/// (all mounts together; default 3000), `SYNCFS_CONVERGE_TIMEOUT=<s>` the wait for convergence.
///
/// **On by default** (two seeds, about 30 s each); `SYNCFS_CONVERGE=0` skips it. Each product bug
/// it found is a deterministic test in `Tests/SyncFSTests/ConflictRaceTests.swift` or the mount
/// tests (e.g. `anAppendMadeJustAfterARemoteEditSurvivesTheEchosTouch` in `EventsTest`,
/// `aMergedMoveOfAFolderIntoItsOwnSubfolderMakesNoCycle`).
@Suite(
    .serialized,
    .enabled(if: convergenceTestRequested, "skipped with SYNCFS_CONVERGE=0"))
struct ConvergenceTest {
    static let seeds: [UInt64] = {
        let text = ProcessInfo.processInfo.environment["SYNCFS_CONVERGE_SEED"] ?? ""
        let parsed = text.split(separator: ",").compactMap { part -> UInt64? in
            let value = part.trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("0x") || value.hasPrefix("0X") { return UInt64(value.dropFirst(2), radix: 16) }
            return UInt64(value)
        }
        return parsed.isEmpty ? [0xC0_FFEE, 0x5EED_0002] : parsed
    }()

    static let opCount = Int(ProcessInfo.processInfo.environment["SYNCFS_CONVERGE_OPS"] ?? "") ?? 3000

    /// Heal to identical trees with empty queues, at most (seconds; `SYNCFS_CONVERGE_TIMEOUT`).
    static let convergenceTimeout = Double(ProcessInfo.processInfo.environment["SYNCFS_CONVERGE_TIMEOUT"] ?? "") ?? 180

    @Test(arguments: seeds)
    func threeMountsConvergeAfterConcurrentChangesAndOutages(seed: UInt64) throws {
        let seedText = "SYNCFS_CONVERGE_SEED=0x" + String(seed, radix: 16)
        try MountGroup.with(count: 3, uploadDelay: 50, arguments: MassDeleteGuardTest.neverTrips) { group in
            let start = ContinuousClock.now
            let workers = group.mounts.indices.map { index in
                ConvergenceWorker(
                    index: index, root: group.mounts[index].root, seed: seed,
                    opCount: Self.opCount / group.mounts.count + (index < Self.opCount % group.mounts.count ? 1 : 0),
                    start: start)
            }
            let outages = OutageSchedule(group: group, seed: seed, start: start)
            // The workers, and the outage schedule until they are done.
            runConcurrently(
                [{ outages.run() }] as [@Sendable () -> Void]
                    + [
                        {
                            runConcurrently(workers.map { worker in { worker.run() } })
                            outages.stop()
                        }
                    ])
            let operating = ContinuousClock.now - start

            // Heal: every container is back; each mount uploads what it has queued.
            for index in group.mounts.indices { group.setOutage(index, false) }
            let healed = ContinuousClock.now
            let syncs = SyncResults(count: group.mounts.count)
            runConcurrently(
                group.mounts.indices.map { index in
                    { syncs.set(index, Result { try group.mounts[index].runSync(timeout: 60) }) }
                })
            let (converged, last) = waitForConvergence(group)
            let convergence = ContinuousClock.now - healed

            let oracle = ConvergenceOracle(workers: workers, seedText: seedText)
            let trees = converged.map { [$0] } ?? group.mounts.map { SyncedTree.snapshot($0.root) }
            let findings = oracle.check(trees)
            let summary = Self.summary(
                seedText: seedText, workers: workers, outages: outages, operating: operating,
                convergence: converged == nil ? nil : convergence, findings: findings)
            print(summary)

            var problems: [String] = []
            for (index, result) in syncs.results.enumerated() {
                switch result {
                case .success(let process) where process.ok: break
                case .success(let process): problems.append("sync of mount \(MountGroup.label(index)): \(process)")
                case .failure(let error): problems.append("sync of mount \(MountGroup.label(index)): \(error)")
                case nil: problems.append("sync of mount \(MountGroup.label(index)) did not run")
                }
            }
            if converged == nil {
                problems.append(
                    "the mounts did not converge within \(Int(Self.convergenceTimeout)) s of the heal; "
                        + last.prefix(40).joined(separator: "\n"))
            }
            problems += findings.problems
            // Context for lost tokens only: a replacement the oracle could not see may explain one.
            for worker in workers where findings.lost > 0 && !worker.blindReplacements.isEmpty {
                problems.append(
                    "mount \(worker.label): replacements by rename the oracle could not see (a lost token may be "
                        + "one of theirs):\n" + worker.blindReplacements.joined(separator: "\n"))
            }
            let totalSucceeded = workers.reduce(0) { $0 + $1.succeeded }
            if totalSucceeded < Self.opCount / 3 {
                problems.append("too few operations succeeded (\(totalSucceeded) of \(Self.opCount)) to mean anything")
            }
            if !problems.isEmpty {
                let kept = Self.keepLogs(group, seed: seed, report: summary + "\n" + problems.joined(separator: "\n"))
                Issue.record(
                    """
                    convergence test failed (\(seedText)); replay with \(seedText) SYNCFS_CONVERGE_OPS=\(Self.opCount)
                    \(summary)
                    \(problems.joined(separator: "\n"))
                    outages: \(outages.outages.map(\.description).joined(separator: ", "))
                    full daemon logs kept in \(kept)
                    \(group.logs(limit: 1500))
                    """)
            }
        }
    }

    /// Polls until every tree is identical to mount A's and every queue is empty (checked again
    /// a moment later), or the timeout. Returns the tree, or why not (the last look).
    private func waitForConvergence(_ group: MountGroup) -> (SyncedTree?, [String]) {
        let deadline = Date().addingTimeInterval(Self.convergenceTimeout)
        var why: [String] = []
        var candidate: SyncedTree?
        while Date() < deadline {
            let (lines, tree) = group.differences()
            guard let tree else {
                why = ["the trees differ:"] + lines
                candidate = nil
                usleep(200_000)  // scenario: trees compared across polls
                continue
            }
            let statuses = group.mounts.map { try? $0.syncStatus() }
            let quiet = statuses.allSatisfy { $0 != nil && $0!.pendingEntries == 0 && $0!.feedCaughtUp != false }
            if !quiet {
                why = ["the trees are identical, but not every queue is empty:"]
                for (index, status) in statuses.enumerated() {
                    guard let status else {
                        why.append("mount \(MountGroup.label(index)): no status")
                        continue
                    }
                    why.append(
                        "mount \(MountGroup.label(index)): \(status.pendingEntries) queued, caught up "
                            + "\(status.feedCaughtUp.map(String.init) ?? "?")")
                    why += status.failing.prefix(5).map {
                        "    \($0.path ?? $0.fileID): \($0.reason) (\($0.attempts) attempts)"
                    }
                }
                candidate = nil
            } else if let previous = candidate {
                let changes = previous.differences(from: tree, labels: ("before", "after"))
                if changes.isEmpty { return (tree, []) }
                why = ["the trees are identical and every queue is empty, but they still change:"] + changes
                candidate = tree
            } else {
                candidate = tree
            }
            usleep(300_000)  // scenario: trees compared across polls
        }
        return (nil, why)
    }

    private static func summary(
        seedText: String, workers: [ConvergenceWorker], outages: OutageSchedule, operating: Duration,
        convergence: Duration?, findings: ConvergenceOracle.Findings
    ) -> String {
        let perMount = workers.map { worker in
            let total = worker.outcomes.values.reduce(0) { $0 + $1.values.reduce(0, +) }
            return "\(worker.label) \(worker.succeeded)/\(total) ok"
        }.joined(separator: ", ")
        var byKind: [String] = []
        for kind in ConvergenceOp.allCases {
            let merged = workers.reduce(into: [String: Int]()) { all, worker in
                all.merge(worker.outcomes[kind] ?? [:], uniquingKeysWith: +)
            }
            let text = merged.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: " ")
            byKind.append("\(kind.rawValue): \(text)")
        }
        let outageSeconds = Double(outages.outages.reduce(0) { $0 + ($1.to - $1.from) * $1.mounts.count }) / 1000
        let converged = convergence.map { String(format: "%.2f s", seconds($0)) } ?? "not converged"
        return """
            convergence \(seedText): \(workers.reduce(0) { $0 + $1.opCount }) ops (\(perMount)) in \
            \(String(format: "%.1f", seconds(operating))) s, \(outages.outages.count) outages \
            (\(String(format: "%.1f", outageSeconds)) mount-seconds); convergence time (heal to identical): \(converged); \
            final tree: \(findings.files) files, \(findings.directories) folders, \(findings.conflictCopies) conflict copies; \
            tokens: \(findings.required) required, \(findings.present) present, \(findings.removed) removed
              \(byKind.joined(separator: "\n  "))
            """
    }

    /// Copies every daemon's whole log and the report next to each other for a failed run.
    private static func keepLogs(_ group: MountGroup, seed: UInt64, report: String) -> String {
        let directory = "/tmp/syncfs-converge-" + String(seed, radix: 16) + "-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (index, mount) in group.mounts.enumerated() {
            try? FileManager.default.copyItem(
                atPath: mount.logPath, toPath: directory + "/daemon-\(MountGroup.label(index)).log")
        }
        try? report.write(toFile: directory + "/report.txt", atomically: false, encoding: .utf8)
        return directory
    }
}

/// `ConvergenceTest` runs unless `SYNCFS_CONVERGE=0` (a seed given always runs it).
let convergenceTestRequested: Bool = {
    let environment = ProcessInfo.processInfo.environment
    return environment["SYNCFS_CONVERGE"] != "0" || !(environment["SYNCFS_CONVERGE_SEED"] ?? "").isEmpty
}()

/// What each mount's `sync` returned (set from several threads).
private final class SyncResults: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Result<ModelProcessResult, Error>?]

    init(count: Int) { stored = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: Result<ModelProcessResult, Error>) { lock.withLock { stored[index] = result } }

    var results: [Result<ModelProcessResult, Error>?] { lock.withLock { stored } }
}
