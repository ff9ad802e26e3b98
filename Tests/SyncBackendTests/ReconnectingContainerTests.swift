import Foundation
import Synchronization
import TestSupport
import Testing

@testable import SyncBackend

/// `ReconnectingContainer`: a container that may be away fails fast and retryably, comes back by
/// itself, never creates anything, and never uses another container found at its path.
@Suite("ReconnectingContainer")
struct ReconnectingContainerTests {
    let directory: String
    var path: String { directory + "/container" }
    /// Where a container is made before it is moved to `path`.
    var aside: String { directory + "/aside" }

    init() throws {
        directory = try makeTemporaryDirectory()
    }

    /// The events a container reported, in order.
    final class Events: Sendable {
        private let list = Mutex<[ReconnectingContainer.Event]>([])
        func append(_ event: ReconnectingContainer.Event) { list.withLock { $0.append(event) } }
        var all: [ReconnectingContainer.Event] { list.withLock { $0 } }
    }

    @Test func aMissingDirectoryFailsAtOnceWithARetryableErrorNamingThePath() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = ReconnectingContainer(path: path, expectedID: "expected", retryInterval: .seconds(60))
        #expect(container.containerID == "expected")
        // The first call looks at the path; the next ones, within the retry interval, do not.
        let first = await protocolError { _ = try await container.entry(.root) }
        let start = ContinuousClock.now
        var errors = [first]
        for _ in 0..<20 { errors.append(await protocolError { _ = try await container.entry(.root) }) }
        let elapsed = milliseconds(since: start)
        for error in errors {
            #expect(error?.isUnavailable == true)
            #expect(error?.isRetryable == true)
            #expect(error?.description.contains(path) == true)
            #expect(error?.description.contains("does not exist") == true)
        }
        #expect(elapsed < 500, "20 calls took \(elapsed) ms")
        #expect(!FileManager.default.fileExists(atPath: path), "nothing is created")
        #expect(container.reachability != .connected)
    }

    @Test func anEmptyDirectoryIsUnreachableAndStaysEmpty() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let container = ReconnectingContainer(path: path, expectedID: "expected")
        let error = await protocolError { _ = try await container.changes(after: .beginning, limit: 10) }
        #expect(error?.isUnavailable == true)
        #expect(error?.description.contains(LocalContainer.markerName) == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
    }

    @Test func theContainerIsUsedOnceItsDirectoryAppearsAndAgainAfterItWasAway() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let original = try LocalContainer.openOrCreate(at: aside)
        let entry = try await original.mustPut(.random(), base: 0, directoryState("kept"))
        let events = Events()
        let container = ReconnectingContainer(
            path: path, expectedID: original.id, retryInterval: .seconds(1), onEvent: events.append)
        #expect(await protocolError { _ = try await container.entry(entry.id) }?.isUnavailable == true)

        try FileManager.default.moveItem(atPath: aside, toPath: path)
        // Within the retry interval the last answer stands, without looking at the path again.
        #expect(await protocolError { _ = try await container.entry(entry.id) }?.isUnavailable == true)
        try await Task.sleep(for: .milliseconds(1_100))  // scenario: past the 1 s retry interval
        #expect(try await container.entry(entry.id) == entry)
        let added = try await container.mustPut(.random(), base: 0, directoryState("added"))
        let direct = try LocalContainer.openOrCreate(at: path)
        #expect(try await direct.entry(added.id) == added, "the same container")
        #expect(container.reachability == .connected)

        // Away again (moved aside), then back.
        try FileManager.default.moveItem(atPath: path, toPath: aside)
        let away = await protocolError { _ = try await container.entry(entry.id) }
        #expect(away?.isUnavailable == true)
        #expect(await protocolError { _ = try await container.entry(entry.id) }?.isUnavailable == true)
        try FileManager.default.moveItem(atPath: aside, toPath: path)
        try await Task.sleep(for: .milliseconds(1_100))  // scenario: past the 1 s retry interval
        #expect(try await container.entry(added.id) == added)
        #expect(try await container.changes(after: .beginning, limit: 10).entries.map(\.id) == [entry.id, added.id])

        // Each change reported once: away (named), back, away, back.
        let reported = events.all
        #expect(reported.count == 4, "\(reported)")
        for (index, event) in reported.enumerated() {
            if index % 2 == 1 {
                #expect(event == .reconnected)
            } else if case .unreachable(let message) = event {
                #expect(message.contains(path) && message.contains("does not exist"), "\(message)")
            } else {
                Issue.record("event \(index): \(event)")
            }
        }
    }

    @Test func anotherContainerAtThePathIsNeverUsed() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let other = try LocalContainer.openOrCreate(at: path)
        let events = Events()
        let container = ReconnectingContainer(
            path: path, expectedID: "expected-id", retryInterval: .milliseconds(100), onEvent: events.append)
        let found = container.connectNow()
        guard case .otherContainer(let id, let message) = found else {
            Issue.record("found \(found)")
            return
        }
        #expect(id == other.id)
        #expect(message.contains(path))
        for _ in 0..<4 {
            let error = await protocolError { _ = try await container.mustPut(.random(), base: 0, directoryState("x")) }
            #expect(error?.isUnavailable == true)
            #expect(error?.description.contains(other.id) == true)
            #expect(error?.description.contains("expected-id") == true)
            try await Task.sleep(for: .milliseconds(120))  // scenario: past the 100 ms retry interval
        }
        #expect(try await other.changes(after: .beginning, limit: 10).entries.isEmpty, "nothing was written")
        // connectNow reported nothing (its caller says what it found); later looks found the
        // same container again: nothing new to report.
        #expect(events.all.isEmpty, "\(events.all)")
    }

    @Test func anotherContainerFoundLaterIsReportedOnce() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let events = Events()
        let container = ReconnectingContainer(
            path: path, expectedID: "expected-id", retryInterval: .milliseconds(100), onEvent: events.append)
        #expect(await protocolError { _ = try await container.entry(.root) }?.isUnavailable == true)
        let other = try LocalContainer.openOrCreate(at: path)
        for _ in 0..<4 {
            try await Task.sleep(for: .milliseconds(120))  // scenario: past the 100 ms retry interval
            let error = await protocolError { _ = try await container.entry(.root) }
            #expect(error?.description.contains(other.id) == true)
        }
        let refused = events.all.filter { if case .refused = $0 { true } else { false } }
        #expect(refused.count == 1, "\(events.all)")
    }

    @Test func waitingForChangesWhileAwayWaitsForTheNextLookInsteadOfSpinning() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let container = ReconnectingContainer(path: path, expectedID: "expected", retryInterval: .milliseconds(400))
        var start = ContinuousClock.now
        let error = await protocolError {
            _ = try await container.waitForChanges(after: .beginning, timeout: .seconds(10))
        }
        var elapsed = milliseconds(since: start)
        #expect(error?.isUnavailable == true)
        // Below the 10 s timeout: it ended at the next look (generous for a loaded machine).
        #expect(elapsed >= 350 && elapsed < 8_000, "waited \(elapsed) ms")

        // Never beyond the timeout.
        start = ContinuousClock.now
        _ = await protocolError {
            _ = try await container.waitForChanges(after: .beginning, timeout: .milliseconds(50))
        }
        elapsed = milliseconds(since: start)
        #expect(elapsed < 5_000, "waited \(elapsed) ms")

        // The container coming back during the wait: the wait goes on against it.
        let original = try LocalContainer.openOrCreate(at: aside)
        let reconnecting = ReconnectingContainer(
            path: path, expectedID: original.id, retryInterval: .milliseconds(300))
        _ = await protocolError { _ = try await reconnecting.entry(.root) }
        try FileManager.default.moveItem(atPath: aside, toPath: path)
        let waiter = Task { try await reconnecting.waitForChanges(after: .beginning, timeout: .seconds(10)) }
        try await Task.sleep(for: .milliseconds(600))  // scenario: the waiter outlives two 300 ms retries
        try await LocalContainer.openOrCreate(at: path).mustPut(.random(), base: 0, directoryState("new"))
        #expect(try await waiter.value == true)
    }
}
