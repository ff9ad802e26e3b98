import Foundation
import Testing

@testable import SyncMerge

/// Hostile patterns and paths (an ignore file may come from any token holder): each match ends
/// with the right answer within a structural bound on its steps, on a thread with a small stack.
@Suite("Ignore rules on hostile input")
struct IgnoreHostileTests {
    /// A path of 2,000 components in 4,095 bytes.
    static let deepPath = (0..<2000).map { $0 == 1999 ? "xyz" : $0 % 2 == 0 ? "a" : "b" }.joined(separator: "/")

    @Test("a 10 KiB pattern is refused as a problem")
    func longPattern() throws {
        let pattern = String(repeating: "*a", count: 5 * 1024)
        let file = IgnoreFile(parsing: "x\n\(pattern)\n")
        #expect(file.problems.map(\.line) == [2])
        let outcome = try measure(["": file], "aaaa", isDirectory: false)
        #expect(outcome.match == nil)
    }

    @Test("runs of stars against a name they almost match (exponential for a backtracking matcher)")
    func starRuns() throws {
        let name = String(repeating: "*a", count: 2000) + "b"
        let path = String(repeating: "*a", count: 1900) + "b/" + String(repeating: "a", count: 255)
        let file = IgnoreFile(parsing: "\(name)\n/\(path)\n\(String(repeating: "*a/", count: 1300))*\n")
        #expect(file.problems.isEmpty)
        let name255 = String(repeating: "a", count: 255)
        #expect(try measure(["": file], name255, isDirectory: false).match == nil)
        #expect(try measure(["": file], "x/" + name255 + "b", isDirectory: false).match == nil)
        let components = String(repeating: "a/", count: 1299) + "a"
        #expect(try measure(["": file], components, isDirectory: true).match == nil)
        #expect(try measure(["": file], components + "/a", isDirectory: false).match?.line == 3)
    }

    @Test("a thousand ** against a path of 2,000 components")
    func manyGlobstars() throws {
        let globstars = String(repeating: "**/", count: 1000)
        let file = IgnoreFile(parsing: "\(globstars)nothing\n\(globstars)xyz\na/\(globstars)b/**/q\n")
        #expect(file.problems.isEmpty)
        let outcome = try measure(["": file], Self.deepPath, isDirectory: false)
        #expect(outcome.match?.line == 2)
        #expect(try measure(["": file], Self.deepPath.dropLast(3) + "q", isDirectory: false).match?.line == 3)
    }

    @Test("an ignore file in each of 1,000 nested folders")
    func manyFiles() throws {
        let path = Self.deepPath.split(separator: "/").suffix(1000).joined(separator: "/")
        let components = path.split(separator: "/")
        var synced: [String: IgnoreFile] = [:]
        for depth in 0..<components.count {
            let folder = components[..<depth].joined(separator: "/")
            synced[folder] = IgnoreFile(parsing: "*.tmp\n**/a/**/nothing\n!b\n[!x]/**/c?\n")
        }
        let outcome = try measure(synced, path, isDirectory: false)
        #expect(outcome.match == nil)
        let ignored = try measure(synced, path + ".tmp", isDirectory: false)
        #expect(ignored.match?.source == .synced(folder: components.dropLast().joined(separator: "/")))
    }

    /// The match of `path`, checked to stay within the matcher's bound: per line of the files
    /// that apply, (pattern bytes + 3) steps for each byte of the path (and one more), twice.
    private func measure(
        _ synced: [String: IgnoreFile], _ path: String, isDirectory: Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (match: IgnoreMatch?, work: Int) {
        let rules = IgnoreRules(defaults: true, synced: synced, local: nil)
        let files = [IgnoreFile.defaults] + synced.values
        let bound = files.flatMap(\.lines).reduce(0) { $0 + ($1.text.utf8.count + 3) * 2 * (path.utf8.count + 2) }
        let outcome = try onSmallStack { () -> (IgnoreMatch?, Int) in
            var work = 0
            let match = rules.match(path, isDirectory: isDirectory, work: &work)
            return (match, work)
        }
        #expect(
            outcome.1 > 0 && outcome.1 <= bound, "\(outcome.1) steps, bound \(bound)", sourceLocation: sourceLocation)
        return outcome
    }

    /// Runs `body` on a thread with a 128 KiB stack (a daemon's threads may have small ones).
    private func onSmallStack<T: Sendable>(_ body: @escaping @Sendable () -> T) throws -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            box.set(body())
            done.signal()
        }
        thread.stackSize = 128 * 1024
        thread.start()
        done.wait()
        return try #require(box.value)
    }
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?

    var value: T? { lock.withLock { stored } }

    func set(_ value: T) { lock.withLock { stored = value } }
}
