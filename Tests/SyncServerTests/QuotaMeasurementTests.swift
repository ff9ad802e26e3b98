import Foundation
import Logging
import SyncBackend
import SyncBackendTesting
import Synchronization
import Testing

@testable import SyncServer

/// What the quota does while the container's usage cannot be measured (doc/SEMANTICS.md
/// "Quotas"): an unknown usage never means "no quota". With a figure measured before, the quota
/// is held against it plus what was stored since; with none yet, an upload is turned away as
/// temporarily unavailable (the client keeps the change queued and tries again).
@Suite("Storage quotas while the usage cannot be measured")
struct QuotaMeasurementTests {
    static let quota: Int64 = 100 * 1024

    /// Random (incompressible) chunks of 30 KiB: three fit in the quota, a fourth does not.
    private static func chunks(_ count: Int) -> [EncodedChunk] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { index in
            let bytes = (0..<(30 * 1024)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            return Sample.chunk(bytes + [UInt8(index)])
        }
    }

    private static func book(_ log: CapturedLog) -> QuotaBook {
        QuotaBook(
            settings: QuotaSettings(perContainer: ["box": quota]), remeasureEvery: .zero,
            logger: Logger(label: "quota-test") { _ in log })
    }

    @Test func aFailedMeasurementKeepsTheLastFigurePlusWhatWasStoredSince() async throws {
        let container = UnmeasurableContainer()
        let log = CapturedLog()
        let book = Self.book(log)
        let chunks = Self.chunks(4)
        try await book.admit(chunks[0], name: "box", container: container)
        container.measurable.withLock { $0 = false }
        for chunk in chunks.prefix(3) {
            try await book.admit(chunk, name: "box", container: container)
            try await container.putChunk(chunk)
            book.stored(chunk, name: "box")
        }

        await #expect(throws: WireFailure.self) { try await book.admit(chunks[3], name: "box", container: container) }
        do {
            try await book.admit(chunks[3], name: "box", container: container)
        } catch {
            #expect(error.code == .quotaExceeded, "\(error.message)")
        }
        #expect(log.lines.contains { $0.hasPrefix("warning") && $0.contains("last measured") }, "\(log.lines)")
        #expect(!log.lines.contains { $0.contains("not enforced") }, "\(log.lines)")
    }

    @Test func noFigureYetTurnsUploadsAwayUntilOneIsMeasured() async throws {
        let container = UnmeasurableContainer()
        container.measurable.withLock { $0 = false }
        let log = CapturedLog()
        let book = Self.book(log)
        let chunk = Self.chunks(1)[0]

        do {
            try await book.admit(chunk, name: "box", container: container)
            Issue.record("a chunk was admitted while the container's usage was unknown")
        } catch {
            #expect(error.code == .unavailable, "\(error.message)")
            #expect(error.message.contains("quota"), "\(error.message)")
        }
        #expect(log.lines.contains { $0.hasPrefix("warning") && $0.contains("box") }, "\(log.lines)")

        container.measurable.withLock { $0 = true }
        try await book.admit(chunk, name: "box", container: container)
    }
}

/// An in-memory container whose storage accounting fails while `measurable` is false.
private final class UnmeasurableContainer: ForwardingTestContainer, CollectableContainer {
    let base = InMemoryContainer()
    let measurable = Mutex(true)

    func retention() async throws(ContainerProtocolError) -> RetentionPolicy { try await base.retention() }
    func setRetention(_ policy: RetentionPolicy) async throws(ContainerProtocolError) {
        try await base.setRetention(policy)
    }
    func collectGarbage(_ options: CollectionOptions) async throws(ContainerProtocolError) -> CollectionReport {
        try await base.collectGarbage(options)
    }
    func storageStats() async throws(ContainerProtocolError) -> StorageStats {
        guard measurable.withLock({ $0 }) else {
            throw .storageFailure("database error 10: disk I/O error in: PRAGMA journal_mode = WAL")
        }
        return try await base.storageStats()
    }
}
