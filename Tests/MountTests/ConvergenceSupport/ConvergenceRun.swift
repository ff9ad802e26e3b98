import Foundation
import Glibc
import TestSupport

/// Cuts mounts off their container at random times while the workers run: one or two mounts at a
/// time, for about a second to a few seconds each, with pauses in between.
final class OutageSchedule: @unchecked Sendable {
    struct Outage: CustomStringConvertible {
        var mounts: [String]
        var from: Int
        var to: Int
        var description: String { "\(mounts.joined(separator: "+")) \(from)–\(to) ms" }
    }

    private let group: MountGroup
    private let start: ContinuousClock.Instant
    private var random: SeededGenerator
    private let stopped = NSLock()
    private var stopRequested = false
    private(set) var outages: [Outage] = []

    init(group: MountGroup, seed: UInt64, start: ContinuousClock.Instant) {
        self.group = group
        self.start = start
        random = SeededGenerator(seed: seed ^ 0x0DD5_EED5_0DD5_EED5)
    }

    func stop() { stopped.withLock { stopRequested = true } }

    private var isStopped: Bool { stopped.withLock { stopRequested } }

    func run() {
        let count = group.mounts.count
        while sleep(milliseconds: random.int(300...2500)) {
            var chosen: [Int] = [random.below(count)]
            if random.chance(0.35) { chosen.append((chosen[0] + 1 + random.below(count - 1)) % count) }
            let from = elapsedMilliseconds(since: start)
            for index in chosen { group.setOutage(index, true) }
            _ = sleep(milliseconds: random.int(800...3500))
            for index in chosen { group.setOutage(index, false) }
            outages.append(
                Outage(
                    mounts: chosen.map(MountGroup.label), from: from, to: elapsedMilliseconds(since: start)))
        }
    }

    /// Sleeps in short steps; false if stopped meanwhile.
    private func sleep(milliseconds: Int) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        while ContinuousClock.now < deadline {
            if isStopped { return false }
            usleep(20_000)
        }
        return !isStopped
    }
}

func elapsedMilliseconds(since start: ContinuousClock.Instant) -> Int {
    let elapsed = ContinuousClock.now - start
    return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Runs `bodies` on threads of their own and waits for all of them.
func runConcurrently(_ bodies: [@Sendable () -> Void]) {
    let done = DispatchSemaphore(value: 0)
    for body in bodies {
        let thread = Thread {
            body()
            done.signal()
        }
        thread.stackSize = 4 << 20
        thread.start()
    }
    for _ in bodies { done.wait() }
}

/// The oracle of the convergence test, applied to the converged tree (or, if the mounts did not
/// converge, to the union of their trees). Returns one line per problem.
///
/// - Every token some mount wrote (its operation succeeded) and no mount removed having seen it
///   is present in some file: in place, merged, or in a conflict copy.
/// - Every line of every file is a token some mount tried to write (nothing invented, nothing
///   torn), and no file holds conflict markers.
/// - Every name is one the workload makes (`fN.txt`, `dN`), optionally followed by conflict-copy
///   suffixes of either documented form: `NAME (conflicted copy from DEVICE).EXT` (now) or
///   `NAME (conflict from HOST YYYY-MM-DD HHMMSS).EXT` (the older merge policies), the
///   part before the last suffix cut short when the name would pass 255 bytes. No temporary
///   names are left (`.save-…`, `.delete-…`, `.syncfs-moving-…`).
struct ConvergenceOracle {
    let workers: [ConvergenceWorker]
    let seedText: String

    struct Findings {
        var problems: [String] = []
        var required = 0
        var present = 0
        var removed = 0
        /// Required tokens found nowhere.
        var lost = 0
        var files = 0
        var directories = 0
        var conflictCopies = 0
    }

    func check(_ trees: [SyncedTree]) -> Findings {
        var findings = Findings()
        var presentAt: [String: String] = [:]
        let known = workers.reduce(into: Set<String>()) { $0.formUnion($1.attempted) }
        let stranded = workers.reduce(into: Set<String>()) { $0.formUnion($1.strandedTemporaries) }
        var strange: [String] = []
        for tree in trees {
            for (path, entry) in tree.entries where !path.isEmpty {
                let name = baseName(of: path)
                if entry.kind == "f" { findings.files += 1 } else if entry.kind == "d" { findings.directories += 1 }
                if name.contains("(conflict") { findings.conflictCopies += 1 }
                if !stranded.contains(name), let problem = Self.nameProblem(name, kind: entry.kind) {
                    findings.problems.append("\(path): \(problem) (\(seedText))")
                }
                guard let content = entry.content else { continue }
                let text = String(decoding: content, as: UTF8.self)
                if text.contains("<<<<<<<") || text.contains(">>>>>>>") {
                    findings.problems.append("\(path): holds conflict markers (\(seedText))")
                }
                if !content.isEmpty && content.last != UInt8(ascii: "\n") {
                    findings.problems.append("\(path): does not end with a whole line (\(seedText))")
                }
                for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
                    let token = String(line)
                    if known.contains(token) {
                        presentAt[token] = presentAt[token] ?? path
                    } else if strange.count < 10 {
                        strange.append("\(path): line \(token.debugDescription) is no token any mount wrote")
                    }
                }
            }
        }
        findings.problems += strange.map { "\($0) (\(seedText))" }

        let removed = workers.reduce(into: [String: [TokenEvent]]()) { all, worker in
            all.merge(worker.removed) { $0 + $1 }
        }
        findings.removed = removed.count
        var missing: [(String, TokenEvent)] = []
        for worker in workers {
            for (token, origin) in worker.written where removed[token] == nil {
                findings.required += 1
                if presentAt[token] != nil { findings.present += 1 } else { missing.append((token, origin)) }
            }
        }
        findings.lost = missing.count
        missing.sort { $0.1.milliseconds < $1.1.milliseconds }
        for (token, origin) in missing.prefix(12) {
            let trail = workers.flatMap { $0.seen[token] ?? [] }.sorted { $0.milliseconds < $1.milliseconds }
            var lines = ["token \(token) is lost (\(seedText)): written at \(origin)"]
            lines += trail.suffix(8).map { "    read at \($0)" }
            if trail.count > 8 { lines.append("    (\(trail.count - 8) earlier reads)") }
            findings.problems.append(lines.joined(separator: "\n"))
        }
        if missing.count > 12 {
            findings.problems.append("… and \(missing.count - 12) more lost tokens (\(seedText))")
        }
        return findings
    }

    /// Why a name is not one the workload (or a conflict) makes, or nil.
    static func nameProblem(_ name: String, kind: Character) -> String? {
        let suffixes =
            #"((?: \((?:conflicted copy from [^()]+|conflict from [^()]+ \d{4}-\d{2}-\d{2} \d{6}(?: \d+)?)\))*)"#
        let pattern = kind == "d" ? "^d\\d+" + suffixes + "$" : "^f\\d+" + suffixes + "\\.txt$"
        guard kind == "d" || kind == "f" else { return "unexpected kind \(kind)" }
        guard let regex = try? Regex(pattern) else { return "bad pattern" }
        if name.wholeMatch(of: regex) != nil { return nil }
        // A copy of a copy of a copy…: the name would pass NAME_MAX, so the part before the new
        // suffix is cut short (mid-suffix too) and the name is exactly 255 bytes.
        let lastSuffix = #" \(conflict from [^()]+ \d{4}-\d{2}-\d{2} \d{6}(?: \d+)?\)"#
        let cut = kind == "d" ? "^d\\d+.*" + lastSuffix + "$" : "^f\\d+.*" + lastSuffix + "\\.txt$"
        if name.utf8.count == 255, let regex = try? Regex(cut), name.wholeMatch(of: regex) != nil { return nil }
        return "unexpected name \(name.debugDescription) for a \(kind == "d" ? "directory" : "file")"
    }
}
